import { Effect, Metric, Option } from "effect"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"
import { isManagementPath, scopeOfPath } from "../auth/keyScope.ts"
import type { ServiceAuth } from "../auth/ServiceAuth.ts"
import { authRejections, labelled } from "../observability/metrics.ts"
import { clientKey } from "../ratelimit/clientKey.ts"
import type { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { errorFormatOf, errorResponse } from "./OpenAiError.ts"

export interface AdmissionServices {
  readonly auth: ServiceAuth["Service"]
  readonly limiter: RateLimiter["Service"]
}

const rejectionsOf = labelled(authRejections)

/**
 * The key a request presents: `Authorization: Bearer <key>`, or, from a client that sends none
 * (Anthropic's SDKs), `x-api-key: <key>`.
 */
const presentedKey = (headers: Readonly<Record<string, string | undefined>>): string | undefined => {
  const authorization = headers["authorization"]
  if (authorization !== undefined && authorization.trim() !== "") return authorization
  const apiKey = headers["x-api-key"]?.trim()
  return apiKey === undefined || apiKey === "" ? authorization : `Bearer ${apiKey}`
}

/**
 * Whether a request may go on, decided before routing (unknown paths are guarded like known
 * ones): a client past its wrong keys gets 429 without a key check; then the key must fit the
 * path's scope; then the app key's bucket (`/v1`) or the client's (`/api`) must hold a token.
 * Only a wrong key counts against the client: a missing key or one of the other kind guesses nothing.
 * Returns the refusal, or `undefined` to go on.
 */
export const admission = (
  services: AdmissionServices,
  request: HttpServerRequest.HttpServerRequest,
  path: string
): Effect.Effect<HttpServerResponse.HttpServerResponse | undefined> => {
  const scope = scopeOfPath(path)
  if (scope === "public") return Effect.succeed(undefined)
  const { auth, limiter } = services
  const keyed = auth.requiresKey(scope)
  const management = isManagementPath(path)
  if (!keyed && !management) return Effect.succeed(undefined)
  const client = clientKey(request.remoteAddress)
  return Effect.gen(function* () {
    if (keyed) {
      yield* limiter.checkAuthFailures(client)
      const key = yield* auth
        .authorize(scope, presentedKey(request.headers))
        .pipe(
          Effect.tapError((failure) =>
            failure.code === "invalid_api_key" ? limiter.recordAuthFailure(client) : Effect.void
          )
        )
      if (scope === "app" && Option.isSome(key)) yield* limiter.takeKey(key.value)
    }
    if (management) yield* limiter.takeClient(client)
    return undefined
  }).pipe(
    Effect.catchTags({
      AuthFailure: (failure) =>
        Metric.update(rejectionsOf({ code: failure.code }), 1).pipe(
          Effect.as(errorResponse(failure, errorFormatOf(request)))
        ),
      RateLimitExceeded: (error) => Effect.succeed(errorResponse(error, errorFormatOf(request)))
    })
  )
}
