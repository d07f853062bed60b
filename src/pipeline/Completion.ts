import { Context, Effect, Layer, Option } from "effect"
import type { Background } from "../background/Background.ts"
import type { Draining } from "../background/Draining.ts"
import type { DatabaseConfig } from "../db/DatabaseConfig.ts"
import type { DatabaseHealth, DatabaseUnavailable } from "../db/DatabaseHealth.ts"
import type { InvalidChatRequest, MissingUpstreamKey, MissingUserId } from "../domain/requestErrors.ts"
import type { ServerConfig } from "../http/ServerConfig.ts"
import type { ContextBlock } from "../injection/ContextBlock.ts"
import type { MemoryAccess } from "../memories/MemoryAccess.ts"
import { requestSpan, StageTimings } from "../observability/requestSpan.ts"
import type { PluginRejection } from "../plugins/Plugin.ts"
import type { PluginFailed, PluginHost } from "../plugins/PluginHost.ts"
import type { Profiles } from "../profiles/Profiles.ts"
import type { RateLimitExceeded } from "../ratelimit/RateLimitExceeded.ts"
import type { RateLimiter } from "../ratelimit/RateLimiter.ts"
import type { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import type { TraitSchema } from "../traits/TraitSchema.ts"
import type { TurnStore } from "../turns/TurnStore.ts"
import type { UpstreamFailure } from "../upstream/errors.ts"
import type { Upstream, UpstreamReply } from "../upstream/Upstream.ts"
import type { UpstreamConfig } from "../upstream/UpstreamConfig.ts"
import { forward } from "./forward.ts"
import { inject } from "./inject.ts"
import { loadProfile } from "./loadProfile.ts"
import { type CompletionInput, parse } from "./parse.ts"
import { record } from "./record.ts"
import { resolveUser } from "./resolveUser.ts"
import { respond } from "./respond.ts"
import { currentSpanStart } from "./stageTimings.ts"

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

/** What the stages need, provided once when the layer is built. */
type StageServices =
  | Background
  | ContextBlock
  | SnapshotCache
  | DatabaseConfig
  | DatabaseHealth
  | Draining
  | MemoryAccess
  | PluginHost
  | Profiles
  | RateLimiter
  | ServerConfig
  | TraitSchema
  | TurnStore
  | Upstream
  | UpstreamConfig

/**
 * A chat completion (or a Responses or Anthropic Messages request) through the memory pipeline, in
 * stages, each in its own file with its span: parse → resolveUser → loadProfile → inject → forward →
 * respond, which records the turn (and enqueues its extraction) before the answer ends. The answer
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
      // Captured once and provided to every request with a fresh map of its stage timings: the
      // request's context is then one flat map, which every service lookup after it reads.
      const services = yield* Effect.context<StageServices>()

      const complete = (input: CompletionInput): Effect.Effect<UpstreamReply, CompletionFailure> => {
        const context = Context.add(services, StageTimings, new Map<string, number>())
        const withServices = <A, E>(effect: Effect.Effect<A, E, StageServices>) =>
          Effect.provideContext(effect, context)
        return withServices(
          Effect.gen(function* () {
            const started = yield* currentSpanStart
            const { adapter, request, definitions, target, outbound } = yield* parse(input)
            const userId = yield* resolveUser(request, input.headers)
            const snapshot = yield* loadProfile(userId)
            const profile = Option.getOrUndefined(snapshot)?.profile
            const { context: block, receipt } = yield* inject(request, snapshot, definitions)
            const reply = yield* forward(outbound, block, { target, headers: input.headers, userId, profile })
            return yield* respond(adapter, reply, {
              started,
              provider: target.provider,
              profileId: profile?.id,
              receipt,
              record: (answer) => withServices(record(request, { userId, profile }, input.requestId, answer))
            })
          })
        ).pipe(requestSpan("Completion.complete"))
      }

      return Completion.of({ complete })
    })
  )
}
