import { Cause, Effect, Option } from "effect"
import type { ApiAdapter, Outbound } from "../apis/ApiAdapter.ts"
import { type ChatRequest, invalid } from "../apis/ChatRequest.ts"
import { itemsOfResponse, withHistory } from "../apis/responsesState.ts"
import { DatabaseHealth } from "../db/DatabaseHealth.ts"
import type { Profile, ProfileId } from "../domain/Profile.ts"
import { requestStage } from "../observability/requestSpan.ts"
import { Profiles } from "../profiles/Profiles.ts"
import type { KeptResponse } from "../providers/openai/responsesFromChat.ts"
import { ConversationsRepo } from "../responses/ConversationsRepo.ts"
import { StoredResponsesRepo } from "../responses/StoredResponsesRepo.ts"
import type { UpstreamProvider } from "../upstream/UpstreamConfig.ts"

/**
 * The Responses API state the gateway keeps (`request.gatewayResponse`), around the provider call:
 * `recall` puts the conversation the request continues (`previous_response_id`, or `conversation`)
 * before its input, `keep` stores the answered response and adds it to its conversation.
 */

/**
 * The request as the provider gets it when it continues a stored response or a conversation of this
 * user: the whole conversation in `input`. Another user's id, or an unknown one: 400
 * `previous_response_not_found` / `conversation_not_found`, before anything is stored (the user's
 * profile is looked up, not created). Without the database the conversation cannot be rebuilt: 503,
 * rather than an answer without it.
 */
export const makeRecall = Effect.gen(function* () {
  const stored = yield* StoredResponsesRepo
  const conversations = yield* ConversationsRepo
  const profiles = yield* Profiles
  const health = yield* DatabaseHealth

  /** The earlier items of what the request continues, if that is the user's. */
  const historyOf = (kept: KeptResponse, profileId: ProfileId) =>
    kept.previousResponseId !== null
      ? Effect.map(
          stored.chain(kept.previousResponseId, profileId),
          Option.map((chain) => chain.flatMap(itemsOfResponse))
        )
      : kept.conversationId !== null
        ? conversations.history(kept.conversationId, profileId)
        : Effect.succeed(Option.some<ReadonlyArray<unknown>>([]))

  return Effect.fnUntraced(function* (
    adapter: ApiAdapter,
    request: ChatRequest,
    provider: UpstreamProvider,
    userId: string
  ) {
    const kept = request.gatewayResponse?.kept
    if (kept === undefined) return yield* Effect.fromResult(adapter.outbound(request, provider))
    const history = yield* health.guard(
      profiles
        .ofUser(userId)
        .pipe(
          Effect.flatMap(
            Option.match({ onNone: () => Effect.succeedNone, onSome: (profile) => historyOf(kept, profile.id) })
          )
        )
    )
    if (Option.isNone(history)) {
      return yield* kept.previousResponseId !== null
        ? invalid(
            "previous_response_not_found",
            `Previous response with id '${kept.previousResponseId}' not found.`,
            "previous_response_id"
          )
        : invalid("conversation_not_found", `Conversation with id '${kept.conversationId}' not found.`, "conversation")
    }
    const body = withHistory(request.body, history.value)
    return yield* Effect.fromResult(adapter.outbound({ ...request, body }, provider))
  }, requestStage("pipeline.recall"))
})

/**
 * Stores the answered response (unless `store: false`) with the request's own input items, and adds
 * that input and the answer's output to the request's conversation, before the answer ends: a client
 * that has the answer can continue it at once. A response that did not complete is not kept; a
 * failure to keep it is logged and never fails the answer.
 */
export const makeKeep = Effect.gen(function* () {
  const stored = yield* StoredResponsesRepo
  const conversations = yield* ConversationsRepo
  const health = yield* DatabaseHealth
  return (request: ChatRequest, outbound: Outbound, profile: Profile | undefined) =>
    Effect.gen(function* () {
      const state = request.gatewayResponse
      const response = outbound.finalResponse?.()
      if (state === undefined || response === undefined) return
      const { kept, inputItems } = state
      // The gateway's id, or the provider's when it answers natively (and was asked to keep nothing).
      const id = typeof response["id"] === "string" ? response["id"] : kept.id
      if (profile === undefined)
        return yield* Effect.logWarning(`response ${id} not kept: the memory store is unavailable`)
      if (kept.store) {
        yield* health.guard(
          stored.keep({ id, profileId: profile.id, previousResponseId: kept.previousResponseId, inputItems, response })
        )
      }
      if (kept.conversationId !== null) {
        yield* health.guard(conversations.addItems(kept.conversationId, itemsOfResponse({ inputItems, response })))
      }
    }).pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause) ? Effect.interrupt : Effect.logError("response not kept", cause)
      )
    )
})
