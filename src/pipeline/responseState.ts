import { Cause, Effect, Option } from "effect"
import type { ApiAdapter, Outbound } from "../apis/ApiAdapter.ts"
import { type ChatRequest, invalid } from "../apis/ChatRequest.ts"
import { DatabaseHealth } from "../db/DatabaseHealth.ts"
import type { Profile } from "../domain/Profile.ts"
import { requestStage } from "../observability/requestSpan.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { withHistory } from "../responses/responsesState.ts"
import { StoredResponses } from "../responses/StoredResponses.ts"
import type { UpstreamProvider } from "../upstream/UpstreamConfig.ts"

/**
 * The Responses API state the gateway keeps (`request.gatewayResponse`), around the provider call:
 * `recall` puts the conversation that `previous_response_id` continues before the request's input,
 * `keep` stores the answered response for the next request to continue.
 */

/**
 * The request as the provider gets it when it continues a stored response of this user: the whole
 * conversation in `input`. Another user's id, or an unknown one: 400 `previous_response_not_found`,
 * before anything is stored (the user's profile is looked up, not created). Without the database the
 * conversation cannot be rebuilt: 503, rather than an answer without it.
 */
export const makeRecall = Effect.gen(function* () {
  const stored = yield* StoredResponses
  const profiles = yield* Profiles
  const health = yield* DatabaseHealth
  return Effect.fnUntraced(function* (
    adapter: ApiAdapter,
    request: ChatRequest,
    provider: UpstreamProvider,
    userId: string
  ) {
    const previous = request.gatewayResponse?.kept.previousResponseId
    if (previous == null) return yield* Effect.fromResult(adapter.outbound(request, provider))
    const chain = yield* health.guard(
      profiles.find(userId).pipe(
        Effect.flatMap((profile) => stored.chain(previous, profile.id)),
        Effect.catchTag("ProfileNotFound", () => Effect.succeedNone)
      )
    )
    if (Option.isNone(chain)) {
      return yield* invalid(
        "previous_response_not_found",
        `Previous response with id '${previous}' not found.`,
        "previous_response_id"
      )
    }
    return yield* Effect.fromResult(
      adapter.outbound({ ...request, body: withHistory(request.body, chain.value) }, provider)
    )
  }, requestStage("pipeline.recall"))
})

/**
 * Stores the answered response (unless `store: false`) with the request's own input items, before
 * the answer ends: a client that has the answer can continue it at once. A response that did not
 * complete is not stored; a failure to store is logged and never fails the answer.
 */
export const makeKeep = Effect.gen(function* () {
  const stored = yield* StoredResponses
  const health = yield* DatabaseHealth
  return (request: ChatRequest, outbound: Outbound, profile: Profile | undefined) =>
    Effect.gen(function* () {
      const state = request.gatewayResponse
      const response = outbound.finalResponse?.()
      if (state === undefined || !state.kept.store || response === undefined) return
      // The gateway's id, or the provider's when it answers natively (and was asked to keep nothing).
      const id = typeof response["id"] === "string" ? response["id"] : state.kept.id
      if (profile === undefined)
        return yield* Effect.logWarning(`response ${id} not stored: the memory store is unavailable`)
      yield* health.guard(
        stored.keep({
          id,
          profileId: profile.id,
          previousResponseId: state.kept.previousResponseId,
          inputItems: state.inputItems,
          response
        })
      )
    }).pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause) ? Effect.interrupt : Effect.logError("response not stored", cause)
      )
    )
})
