import { Context, Effect, Layer, Metric, Result, Tracer } from "effect"
import { adapters } from "../apis/adapters.ts"
import type { Background } from "../background/Background.ts"
import { Draining } from "../background/Draining.ts"
import { ServerConfig } from "../http/ServerConfig.ts"
import { labelled, overheadTime, upstreamResponseTime } from "../observability/metrics.ts"
import { requestSpan } from "../observability/requestSpan.ts"
import type { PluginRejection } from "../plugins/Plugin.ts"
import type { PluginFailed, PluginHost } from "../plugins/PluginHost.ts"
import { Profiles } from "../profiles/Profiles.ts"
import type { RateLimitExceeded } from "../ratelimit/RateLimitExceeded.ts"
import type { RateLimiter } from "../ratelimit/RateLimiter.ts"
import type { Retrieval } from "../retrieval/Retrieval.ts"
import type { RetrievalConfig } from "../retrieval/RetrievalConfig.ts"
import type { ContextCache } from "../store/ContextCache.ts"
import type { DatabaseConfig } from "../store/DatabaseConfig.ts"
import type { DatabaseHealth, DatabaseUnavailable } from "../store/DatabaseHealth.ts"
import type { MemoryAccess } from "../store/MemoryAccess.ts"
import type { TurnStore } from "../store/TurnStore.ts"
import { TraitSchema } from "../traits/TraitSchema.ts"
import type { UpstreamFailure } from "../upstream/errors.ts"
import { UPSTREAM_CHAT_SPAN, type Upstream, type UpstreamReply } from "../upstream/Upstream.ts"
import { UpstreamConfig } from "../upstream/UpstreamConfig.ts"
import { type ProxiedApi, parseChatRequest } from "./ChatRequest.ts"
import { InvalidChatRequest, type MissingUpstreamKey, type MissingUserId } from "./errors.ts"
import { forward } from "./forward.ts"
import { inject } from "./inject.ts"
import { loadProfile } from "./loadProfile.ts"
import { record, type TurnOwner } from "./record.ts"
import { resolveUser } from "./resolveUser.ts"
import { answerHeaders, relayStream } from "./respond.ts"
import type { AssembledReply } from "./StreamAssembler.ts"
import { selectUpstream } from "./selectUpstream.ts"
import { currentSpanStart, makeStageTimer, millisSince } from "./stageTimings.ts"

export type CompletionFailure =
  | InvalidChatRequest
  | MissingUserId
  | MissingUpstreamKey
  | UpstreamFailure
  | PluginRejection
  | PluginFailed
  | RateLimitExceeded
  | DatabaseUnavailable

export interface CompletionInput {
  /** Which API the client called: its request and answer formats. */
  readonly api: ProxiedApi
  /** The raw request body. */
  readonly text: string
  /** Request headers, lower-cased names. */
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly requestId: string
}

/** What the stages need, provided once when the layer is built. */
type StageServices =
  | Background
  | ContextCache
  | DatabaseConfig
  | DatabaseHealth
  | MemoryAccess
  | PluginHost
  | Profiles
  | RateLimiter
  | Retrieval
  | RetrievalConfig
  | TurnStore
  | Upstream

/** The spans whose durations the debug log and the metrics report. */
const TIMED_SPANS = new Set([
  "pipeline.resolveUser",
  "pipeline.loadProfile",
  "pipeline.inject",
  "pipeline.forward",
  "pipeline.record",
  UPSTREAM_CHAT_SPAN
])

const upstreamResponseTimeOf = labelled(upstreamResponseTime)

/**
 * A chat completion (or a Responses or Anthropic Messages request) through the memory pipeline, in stages (each a span):
 * parse → resolveUser → loadProfile → inject → forward → record (which enqueues extraction) → respond
 * (`respond.ts`: the gateway's headers, a stream relayed with its end held).
 * The answer goes back as the provider sent it. Its end (the whole body, or the chunk with a
 * stream's `[DONE]`) is held until the turn is written: a client that has the full answer has its
 * turn stored. While the database is unavailable the request goes without memory, and its turn
 * waits in memory until the database is back.
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
      const config = yield* ServerConfig
      const upstreamConfig = yield* UpstreamConfig
      const profiles = yield* Profiles
      const traitSchema = yield* TraitSchema
      const draining = yield* Draining
      const timer = makeStageTimer(yield* Effect.tracer, TIMED_SPANS)
      // The stages' services and the tracer that times them, made once here and provided to every
      // request: a request's own context is then one flat map, which every service lookup after it reads.
      const services = Context.add(yield* Effect.context<StageServices>(), Tracer.Tracer, timer.tracer)
      const withServices = <A, E>(effect: Effect.Effect<A, E, StageServices>): Effect.Effect<A, E> =>
        Effect.provideContext(effect, services)

      /** Everything that can be refused is refused here, before anything is stored or sent. */
      const parse = Effect.fnUntraced(function* (input: CompletionInput) {
        const adapter = adapters[input.api]
        const request = yield* parseChatRequest(adapter, input.text, input.headers, config)
        const definitions = yield* Result.match(traitSchema.withRequestTraits(request.requestTraits), {
          onFailure: (problem) =>
            Effect.fail(
              new InvalidChatRequest({
                code: "invalid_service_options",
                message: `Invalid trait declaration: ${problem}`,
                param: "service.traits"
              })
            ),
          onSuccess: Effect.succeed
        })
        // Anthropic's Messages API goes to Anthropic, natively; the OpenAI APIs are translated for it.
        const target = yield* selectUpstream(input.headers, upstreamConfig, adapter.nativeProvider)
        if (adapter.toAnthropic !== undefined && target.provider === "anthropic") {
          // What the translation cannot carry is refused now, before a profile is created or a turn stored.
          yield* Effect.fromResult(adapter.toAnthropic(request.body))
        }
        return { adapter, request, definitions, target }
      })

      const stages = (input: CompletionInput): Effect.Effect<UpstreamReply, CompletionFailure, StageServices> =>
        timer.collect((timings) =>
          Effect.gen(function* () {
            const started = yield* currentSpanStart
            const { adapter, request, definitions, target } = yield* parse(input)
            const userId = yield* resolveUser(request, input.headers)
            const snapshot = yield* loadProfile(userId)
            const profile = snapshot._tag === "Some" ? snapshot.value.profile : undefined
            const { context, receipt } = yield* inject(request, snapshot, definitions)
            const reply = yield* forward(adapter, request, context, { target, headers: input.headers, userId, profile })
            const owner: TurnOwner =
              profile === undefined
                ? {
                    _tag: "Deferred",
                    userId,
                    findProfile: Effect.map(profiles.getOrCreate(userId), ({ profile }) => profile.id)
                  }
                : { _tag: "Known", profile }
            const recordReply = (reply: AssembledReply | undefined): Effect.Effect<void> =>
              reply === undefined ? Effect.void : withServices(record(request, owner, input.requestId, reply))

            // A non-streamed answer is recorded before anything is sent: its overhead includes the commit.
            if (reply._tag === "Body" && reply.status === 200) {
              yield* recordReply(adapter.replyOf(reply.body))
            }
            const upstreamMs = timings.get(UPSTREAM_CHAT_SPAN) ?? 0
            const overheadMs = (yield* millisSince(started)) - upstreamMs
            yield* Metric.update(upstreamResponseTimeOf({ provider: target.provider }), upstreamMs / 1000)
            yield* Metric.update(overheadTime, overheadMs / 1000)
            yield* Effect.logDebug("completion stages", { ...Object.fromEntries(timings), overheadMs })
            const headers = answerHeaders(reply.headers, profile?.id, receipt, overheadMs)
            if (reply._tag === "Body") return { ...reply, headers }
            const pieces = relayStream(adapter, reply.pieces, {
              started,
              record: recordReply,
              streamsEnd: draining.streamsEnd
            })
            return { ...reply, headers, pieces }
          })
        )

      return Completion.of({
        complete: (input: CompletionInput) => withServices(stages(input)).pipe(requestSpan("Completion.complete"))
      })
    })
  )
}
