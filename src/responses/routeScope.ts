import { Effect, Option, Schema } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { clientError } from "../domain/ClientError.ts"
import { errorResponse } from "../http/OpenAiError.ts"
import { makePassThrough } from "../http/PassthroughRoutes.ts"
import { addressedNamespace, currentNamespace } from "../namespaces/Namespace.ts"
import { selectUpstream } from "../pipeline/selectUpstream.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { UpstreamConfig } from "../upstream/UpstreamConfig.ts"
import { responsesStateFor } from "./responsesState.ts"
import type { ResponseScope } from "./StoredResponses.ts"

/** An OpenAI-shaped error answer. */
export const errorAnswer = (status: 400 | 404 | 409, code: string, message: string, param?: string) =>
  errorResponse({ clientError: clientError(status, code, message, { param }) })

const ListQuery = Schema.Struct({
  limit: Schema.optionalKey(
    Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))
  ),
  order: Schema.optionalKey(Schema.Literals(["asc", "desc"])),
  after: Schema.optionalKey(Schema.String)
})
const decodeListQuery = Schema.decodeUnknownOption(ListQuery)

/** A list call's page, as OpenAI's list endpoints take it: `limit` (default 20), `order` (default newest first), `after`. */
export interface ListPage {
  readonly limit: number
  readonly order: "asc" | "desc"
  readonly after: string | undefined
}

/** The request's list query, or the 400 that says what is wrong with it. */
export const listPageOf = (
  request: HttpServerRequest.HttpServerRequest
): { readonly page: ListPage } | { readonly refused: HttpServerResponse.HttpServerResponse } => {
  const query = decodeListQuery(Object.fromEntries(new URL(request.url, "http://gateway").searchParams))
  if (Option.isNone(query))
    return { refused: errorAnswer(400, "invalid_query", "limit must be 1–100, order 'asc' or 'desc'") }
  const { limit = 20, order = "desc", after } = query.value
  return { page: { limit, order, after } }
}

/**
 * What the routes over the state the gateway keeps (stored responses, conversations) share: whom a
 * request reaches, and whether its provider keeps the state instead (its call is then passed through).
 */
export const makeRouteScope = Effect.gen(function* () {
  const profiles = yield* Profiles
  const config = yield* UpstreamConfig
  const passThrough = yield* makePassThrough

  /**
   * The state a request reaches: its key's namespace's, and its user's only when it names one
   * (`X-Service-Id`); `None` when it names a user the gateway does not know.
   */
  const scope = Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const namespace = addressedNamespace(yield* currentNamespace)
    const user = request.headers["x-service-id"]
    if (user === undefined || user === "") return Option.some<ResponseScope>({ namespace, profileId: undefined })
    const profile = yield* Effect.option(profiles.find(user))
    return Option.map(profile, (found): ResponseScope => ({ namespace, profileId: found.id }))
  })

  /** Whether the request's provider keeps the conversation state itself (`UPSTREAM_RESPONSES_STATE=passthrough`). */
  const providerKeepsState = Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const only = request.headers["anthropic-version"] === undefined ? undefined : "anthropic"
    const target = yield* Effect.option(selectUpstream(request.headers, config, only))
    return Option.isSome(target) && responsesStateFor(target.value.provider, config.responsesState) === "passthrough"
  })

  /** The gateway's answer when it keeps the state, else the provider's. */
  const keptHere = <E, R>(
    answer: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.flatMap(
      providerKeepsState,
      (elsewhere): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
        elsewhere ? passThrough : answer
    )

  return { scope, providerKeepsState, passThrough, keptHere }
})
