import { Effect, Option, Schema } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { errorFormatOf } from "../apis/errorFormat.ts"
import { responsesStateFor } from "../apis/responsesState.ts"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"
import type { Profile } from "../domain/Profile.ts"
import { errorResponse } from "../http/OpenAiError.ts"
import { RequestIdentity, type RequestUser } from "../identity/RequestIdentity.ts"
import { makePassThrough } from "../pipeline/PassthroughRoutes.ts"
import { selectUpstream } from "../pipeline/selectUpstream.ts"
import { clientProvider } from "../providers/providers.ts"
import { stateIdProblem } from "../responses/stateIds.ts"
import { UpstreamConfig } from "../upstream/UpstreamConfig.ts"
import { ListQuery } from "./ResponsesApi.ts"

/** An OpenAI-shaped error answer. */
export const errorAnswer = (status: 400 | 404 | 409, code: string, message: string, param?: string) =>
  errorResponse({ clientError: clientError(status, code, message, { param }) })

/** A refusal the routes over kept state answer with, in the error format of the request's client. */
export class Refused {
  readonly response: HttpServerResponse.HttpServerResponse
  constructor(response: HttpServerResponse.HttpServerResponse) {
    this.response = response
  }
}

/** Refuses with an error that says how a client sees it, in the request's client's format. */
export const refuse = (error: ClientFacing): Effect.Effect<never, Refused, HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    Effect.fail(new Refused(errorResponse(error, errorFormatOf(request))))
  )

/** An id in a path (a response's, a conversation's, an item's) the gateway could keep, or the 400 that says why not. */
export const checkedId = (id: string, code: string, what: string): Effect.Effect<string, Refused> => {
  const problem = stateIdProblem(id)
  return problem === undefined
    ? Effect.succeed(id)
    : Effect.fail(new Refused(errorAnswer(400, code, `The ${what} ${problem}`)))
}

const decodeListQuery = Schema.decodeUnknownOption(ListQuery)

/** A list call's page, as OpenAI's list endpoints take it: `limit` (default 20), `order` (default newest first), `after`. */
export interface ListPage {
  readonly limit: number
  readonly order: "asc" | "desc"
  readonly after: string | undefined
}

/** The request's list query, or the 400 that says what is wrong with it. */
export const listPageOf = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<ListPage, Refused> => {
  const query = decodeListQuery(Object.fromEntries(new URL(request.url, "http://gateway").searchParams))
  if (Option.isNone(query))
    return Effect.fail(
      new Refused(errorAnswer(400, "invalid_query", "limit must be 1–100, order 'asc' or 'desc', after an item's id"))
    )
  const { limit = 20, order = "desc", after } = query.value
  return Effect.succeed({ limit, order, after })
}

/** Answers a handler's refusal as its response. */
export const answered = <R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, Refused, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  Effect.catch(handler, (refused) => Effect.succeed(refused.response))

/**
 * What the routes over the state the gateway keeps (stored responses, conversations) share: whose
 * state a request reaches — always one user's, known as every route knows it (`RequestIdentity`) —
 * and whether its provider keeps the state instead (its call is then passed through).
 */
export const makeRouteScope = Effect.gen(function* () {
  const identity = yield* RequestIdentity
  const config = yield* UpstreamConfig
  const passThrough = yield* makePassThrough

  /**
   * The request's user. None, or one a plugin refuses: the refusal (400 `missing_user_id`, the plugin's
   * 401, …), so nothing is read or written across the namespace.
   */
  const user = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    identity.require(request.headers).pipe(Effect.catch(refuse))
  )

  /** The request's user's profile: `None` when that user has none yet (nothing of theirs is kept). */
  const owner: Effect.Effect<Option.Option<Profile>, Refused, HttpServerRequest.HttpServerRequest> = Effect.flatMap(
    user,
    identity.profileOf
  )

  /** The user's profile, created on first use. */
  const profileFor = (of: RequestUser) => identity.profileFor(of).pipe(Effect.catch(refuse))

  /** Whether the request's provider keeps the conversation state itself (`UPSTREAM_RESPONSES_STATE=passthrough`). */
  const providerKeepsState = Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const target = yield* Effect.option(selectUpstream(request.headers, config, clientProvider(request.headers)))
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

  return { user, owner, profileFor, providerKeepsState, passThrough, keptHere }
})
