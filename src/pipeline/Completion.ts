import { Context, Effect, Layer, Option } from "effect"
import { continuesConversation } from "../apis/responsesState.ts"
import type { BudgetExceeded } from "../budgets/BudgetExceeded.ts"
import { Budgets } from "../budgets/Budgets.ts"
import type { DatabaseUnavailable } from "../db/DatabaseHealth.ts"
import { DatabaseHealth } from "../db/DatabaseHealth.ts"
import type { InvalidChatRequest, MissingUpstreamKey, MissingUserId } from "../domain/requestErrors.ts"
import { RequestIdentity } from "../identity/RequestIdentity.ts"
import { ContextBlock } from "../injection/ContextBlock.ts"
import { ContextBlocksRepo } from "../injection/ContextBlocksRepo.ts"
import { PlacementConfig } from "../injection/PlacementConfig.ts"
import { CurrentKey } from "../keys/CurrentKey.ts"
import { MemoryAccess } from "../memories/MemoryAccess.ts"
import { requestSpan, StageTimings } from "../observability/requestSpan.ts"
import type { PluginRejection } from "../plugins/Plugin.ts"
import type { PluginFailed } from "../plugins/PluginHost.ts"
import { Profiles } from "../profiles/Profiles.ts"
import type { UpstreamFailure } from "../providers/errors.ts"
import type { RateLimitExceeded } from "../ratelimit/RateLimitExceeded.ts"
import { ConversationsRepo } from "../responses/ConversationsRepo.ts"
import { StoredResponsesRepo } from "../responses/StoredResponsesRepo.ts"
import { Routes } from "../routing/Routes.ts"
import { type Candidate, type Sender, UpstreamRouter } from "../routing/UpstreamRouter.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { ThreadsRepo } from "../threads/ThreadsRepo.ts"
import { NamespaceTraitSchemas } from "../traits/NamespaceTraitSchemas.ts"
import { TraitSchema } from "../traits/TraitSchema.ts"
import { TurnsRepo } from "../turns/TurnsRepo.ts"
import { Upstream } from "../upstream/Upstream.ts"
import type { UpstreamReply } from "../upstream/UpstreamReply.ts"
import { UsageRecorder } from "../usage/UsageRecorder.ts"
import { makeForward } from "./forward.ts"
import { makeInject } from "./inject.ts"
import { makeLoadProfile } from "./loadProfile.ts"
import { askedOf, type CompletionInput, makeParse } from "./parse.ts"
import { boundKeyId, makeRecord } from "./record.ts"
import { makeResolveUser } from "./resolveUser.ts"
import { makeRespond } from "./respond.ts"
import { makeKeep, makeRecall } from "./responseState.ts"
import { makeRestore } from "./restore.ts"
import { currentSpanStart } from "./stageTimings.ts"
import { makeTail, placedReceipt, turnContext } from "./tail.ts"

export type { CompletionInput }

export type CompletionFailure =
  | InvalidChatRequest
  | MissingUserId
  | MissingUpstreamKey
  | UpstreamFailure
  | PluginRejection
  | PluginFailed
  | RateLimitExceeded
  | DatabaseUnavailable
  | BudgetExceeded

/**
 * A chat completion (or a Responses or Anthropic Messages request) through the memory pipeline, in
 * stages, each in its own file with its span: parse → resolveUser → (recall: a Responses conversation
 * the gateway keeps) → loadProfile → (restore: a chat thread) → inject → forward → respond, which
 * records the turn (and enqueues its extraction), and keeps a Responses answer, before the answer ends. The answer
 * goes back as the provider sent it; its end (the whole body, or the chunk with a stream's `[DONE]`)
 * is held until the turn is written: a client that has the full answer has its turn stored. While
 * the database is unavailable the request goes without memory, and its turn waits in memory until
 * the database is back.
 */
export class Completion extends Context.Service<
  Completion,
  {
    readonly complete: (input: CompletionInput) => Effect.Effect<UpstreamReply, CompletionFailure>
  }
>()("gateway/pipeline/Completion") {
  static readonly layer = Layer.effect(
    Completion,
    Effect.gen(function* () {
      // Each stage takes the services it needs once, here: a request provides nothing but its own
      // map of stage timings (merging the layer's context into every request's, twice, cost 6% of
      // its instructions).
      const parse = yield* makeParse
      const resolveUser = yield* makeResolveUser
      const loadProfile = yield* makeLoadProfile
      const inject = yield* makeInject
      const forward = yield* makeForward
      const respond = yield* makeRespond
      const record = yield* makeRecord
      const recall = yield* makeRecall
      const keep = yield* makeKeep
      const restore = yield* makeRestore
      const tail = yield* makeTail
      const placementConfig = yield* PlacementConfig
      const budgets = yield* Budgets
      const router = yield* UpstreamRouter
      const traitSchemas = yield* NamespaceTraitSchemas

      const complete = (input: CompletionInput): Effect.Effect<UpstreamReply, CompletionFailure> =>
        Effect.gen(function* () {
          const started = yield* currentSpanStart
          const { adapter, request, candidates, firstOutbound } = yield* parse(input)
          const keyId = yield* boundKeyId
          const usedKey = yield* CurrentKey
          // Resolved here, in the request: the end of a stream (and its turn's record) runs after the handler returned.
          const { namespace, userId } = yield* resolveUser(adapter, request, input.headers)
          // The namespace's trait schema (its own or the gateway's), the request's declarations over it.
          const definitions = traitSchemas.withRequestTraits(namespace, request.requestTraits)
          const budget = yield* budgets.check({ namespace, keyId: usedKey?.id, userId })
          // A Responses request that continues a response the gateway kept: the whole conversation goes
          // (one the user may not continue is refused here, before the profile is made).
          const first = candidates[0]!
          const firstSent =
            continuesConversation(request) && firstOutbound !== undefined
              ? yield* recall(adapter, askedOf(request, first), first.target.provider, userId)
              : firstOutbound
          const { snapshot, shared } = yield* loadProfile(
            namespace,
            userId,
            request.sharedMemories && !request.skipInjection
          )
          const profile = Option.getOrUndefined(snapshot)?.profile
          const placement = request.injectionPlacement ?? placementConfig.placement

          /** The request made ready for one target (its provider's API, its model) and sent there. */
          const attempt = Effect.fnUntraced(function* (candidate: Candidate, send: Sender) {
            const provider = candidate.target.provider
            const asked = askedOf(request, candidate)
            const sent =
              candidate === first && firstSent !== undefined
                ? firstSent
                : continuesConversation(asked)
                  ? yield* recall(adapter, asked, provider, userId)
                  : yield* Effect.fromResult(adapter.outbound(asked, provider))
            // A chat completion in a thread the gateway keeps: its earlier turns go first.
            const {
              outbound: prepared,
              thread,
              note
            } = asked.threadId === undefined
              ? { outbound: sent, thread: undefined, note: undefined }
              : yield* restore(adapter, asked, asked.threadId, provider, sent, profile)
            // Where the context goes: at the conversation's tail, with the earlier turns' tails back in place.
            const plan =
              placement === "latest" && Option.isSome(snapshot) && !request.skipInjection
                ? yield* tail.find(prepared, snapshot.value)
                : undefined
            const { context: block, receipt } = yield* inject(request, snapshot, definitions, plan?.shown, shared)
            // `skipInjection` sends the request as it is: not even a thread's note of its earlier turns.
            const text = request.skipInjection ? undefined : turnContext(block, note)
            const reply = yield* forward(
              prepared,
              { text, plan },
              { target: candidate.target, headers: input.headers, namespace, userId, profile, send }
            )
            return { reply, prepared, thread, plan, receipt, text, model: candidate.model }
          })

          const { reply, prepared, thread, plan, receipt, text, model, served } = yield* router.serve(
            candidates,
            attempt
          )
          const kept = plan === undefined || profile === undefined ? undefined : tail.keep(profile.id, plan, text)
          return yield* respond(adapter, reply, {
            started,
            provider: served.provider,
            api: prepared.api,
            profileId: profile?.id,
            receipt: placedReceipt(receipt, placement, plan),
            thread,
            served,
            record: (answer, incomplete) =>
              record(
                request,
                { namespace, userId, profile, keyId, tail: kept },
                input.requestId,
                // A translated response the gateway keeps is known to the client by the gateway's id.
                prepared.answerId === undefined ? answer : { ...answer, answerId: prepared.answerId },
                incomplete
              ),
            // Only a Responses request whose state the gateway keeps has anything to keep.
            keep: request.gatewayResponse === undefined ? Effect.void : keep(request, prepared, profile),
            owner: { namespace, keyId: usedKey?.id, userId, model: model ?? request.model },
            budget
          })
        }).pipe(Effect.provideService(StageTimings, new Map<string, number>()), requestSpan("Completion.complete"))

      return Completion.of({ complete })
    })
  ).pipe(
    Layer.provide([
      SnapshotCache.layer,
      Profiles.layer,
      RequestIdentity.layer,
      Upstream.layer,
      TraitSchema.layer,
      NamespaceTraitSchemas.layer,
      ContextBlock.layer,
      ConversationsRepo.layer,
      StoredResponsesRepo.layer,
      DatabaseHealth.layer,
      TurnsRepo.layer,
      ContextBlocksRepo.layer,
      MemoryAccess.layer,
      ThreadsRepo.layer,
      UsageRecorder.layer,
      Budgets.layer,
      Routes.layer,
      UpstreamRouter.layer
    ])
  )
}
