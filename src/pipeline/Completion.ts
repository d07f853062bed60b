import { Cause, Context, Effect, Layer, Metric, Option, Result, Stream } from "effect"
import * as Sse from "effect/encoding/Sse"
import { Background } from "../background/Background.ts"
import { Draining } from "../background/Draining.ts"
import { labelled, overheadTime, streamFirstChunkTime, upstreamResponseTime } from "../observability/metrics.ts"
import { AppConfig } from "../config/AppConfig.ts"
import { Retrieval } from "../retrieval/Retrieval.ts"
import { ContextCache } from "../store/ContextCache.ts"
import type { ProfileSnapshot } from "../store/ContextStore.ts"
import { DatabaseHealth, type DatabaseUnavailable, requestsWithoutMemory } from "../store/DatabaseHealth.ts"
import { MemoryAccess } from "../store/MemoryAccess.ts"
import { ProfileStore } from "../store/ProfileStore.ts"
import { TurnStore } from "../store/TurnStore.ts"
import { TraitSchema } from "../traits/TraitSchema.ts"
import type { UpstreamFailure } from "../upstream/errors.ts"
import { Upstream, type UpstreamReply } from "../upstream/Upstream.ts"
import { checkUserId, parseChatRequest, takenUserId } from "./ChatRequest.ts"
import { InvalidChatRequest, type MissingUpstreamKey, MissingUserId } from "./errors.ts"
import type { PluginRejection } from "../plugins/Plugin.ts"
import { type PluginFailed, PluginHost } from "../plugins/PluginHost.ts"
import type { RateLimitExceeded } from "../ratelimit/RateLimitExceeded.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { inject, type InjectionReceipt } from "./inject.ts"
import { replyOfCompletion, submitTurn, type TurnOwner } from "./record.ts"
import { forwardedHeaders, selectUpstream } from "./selectUpstream.ts"
import { type AssembledReply, makeStreamAssembler } from "./StreamAssembler.ts"

export const CONTEXT_HEADER = "x-service-context"
export const OVERHEAD_HEADER = "x-service-overhead-ms"
/** `available`, or `unavailable` when the request went without memory because the database was. */
export const MEMORY_HEADER = "x-service-memory"

/** Milliseconds spent in each stage of one completion, for the overhead header and the debug log. */
const stageClock = () => {
  const started = performance.now()
  let last = started
  const stages: Record<string, number> = {}
  return {
    mark: (stage: string) => {
      const now = performance.now()
      stages[stage] = Math.round((now - last) * 1000) / 1000
      last = now
    },
    stage: (stage: string) => stages[stage] ?? 0,
    stages: () => ({ ...stages }),
    total: () => performance.now() - started
  }
}

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
  /** The raw request body. */
  readonly text: string
  /** Request headers, lower-cased names. */
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly requestId: string
}

const encoder = new TextEncoder()

const upstreamResponseTimeOf = labelled(upstreamResponseTime)

/** The in-band end of a stream that failed after it started: an SSE `error` event, then nothing. */
const errorEvent = (code: string, message: string) =>
  encoder.encode(
    Sse.encoder.write({
      _tag: "Event",
      event: "error",
      id: undefined,
      data: JSON.stringify({ error: { message, type: code === "server_shutting_down" ? "server_error" : "upstream_error", code, param: null } })
    })
  )

const receiptHeader = (profileId: string | null, receipt: InjectionReceipt | "unavailable") =>
  JSON.stringify(
    receipt === "unavailable"
      ? { profileId, memory: "unavailable" }
      : receipt.skipped
      ? { profileId, skipped: true }
      : {
        profileId,
        summary: receipt.summary,
        traits: receipt.traits,
        memories: receipt.memories,
        plugins: receipt.plugins,
        estimatedTokens: receipt.estimatedTokens,
        retrieval: receipt.retrieval,
        ...(receipt.semantic === "used" || receipt.semantic === "off" ? {} : { semantic: receipt.semantic })
      }
  )

/**
 * A chat completion through the memory pipeline:
 * parse → resolve the user → inject context → forward → (record the turn + enqueue extraction).
 * The answer goes back as the provider sent it. Its end (the whole body, or the chunk with a
 * stream's `[DONE]`) is held until the turn is written: a client that has the full answer has its
 * turn stored. While the database is unavailable the request goes without memory, and its turn
 * waits in memory until the database is back.
 */
export class Completion extends Context.Service<Completion, {
  readonly complete: (input: CompletionInput) => Effect.Effect<UpstreamReply, CompletionFailure>
}>()("gateway/pipeline/Completion") {
  static readonly layer = Layer.effect(
    Completion,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const profiles = yield* ProfileStore
      const traitSchema = yield* TraitSchema
      const upstream = yield* Upstream
      const background = yield* Background
      const host = yield* PluginHost
      const limiter = yield* RateLimiter
      const cache = yield* ContextCache
      const health = yield* DatabaseHealth
      const draining = yield* Draining
      const services = Context.make(AppConfig, config).pipe(
        Context.add(PluginHost, host),
        Context.add(MemoryAccess, yield* MemoryAccess),
        Context.add(Retrieval, yield* Retrieval),
        Context.add(TurnStore, yield* TurnStore),
        Context.add(Background, background)
      )

      /**
       * The user's profile and what injection needs of it: from the cache when possible (no query
       * at all), else created if new and read in one round trip (and cached), within the database deadline.
       */
      const snapshotOf = (userId: string) =>
        Effect.flatMap(cache.lookup(userId), Option.match({
          onSome: Effect.succeed,
          onNone: () =>
            health.guard(profiles.getOrCreate(userId).pipe(
              Effect.catchTag("ExternalIdConflict", (conflict) => Effect.fail(takenUserId(conflict))),
              Effect.flatMap(({ profile }) => cache.load(profile))
            ))
        }))

      const complete = Effect.fn("Completion.complete")(function*(input: CompletionInput) {
        const clock = stageClock()
        const request = yield* parseChatRequest(input.text, input.headers, {
          maxMessages: config.maxMessages,
          maxJsonDepth: config.maxJsonDepth
        })
        const resolved = yield* host.resolveUser({ headers: input.headers, body: request.body, userId: request.userId })
        const userId = resolved === undefined ? undefined : yield* checkUserId(resolved, "the resolved user id")
        if (userId === undefined) return yield* new MissingUserId()
        yield* limiter.takeUser(userId)
        const definitions = yield* Result.match(traitSchema.withRequestTraits(request.requestTraits), {
          onFailure: (problem) =>
            Effect.fail(new InvalidChatRequest({ code: "invalid_service_options", message: `Invalid trait declaration: ${problem}`, param: "service.traits" })),
          onSuccess: Effect.succeed
        })
        const target = yield* selectUpstream(input.headers, config.upstream)
        clock.mark("parse")
        // Past the deadline, or with the database down, the request goes on without memory.
        const snapshot = yield* snapshotOf(userId).pipe(
          Effect.map(Option.some),
          Effect.catchTag("DatabaseUnavailable", (unavailable) =>
            config.failOpen
              ? Effect.as(Metric.update(requestsWithoutMemory, 1), Option.none<ProfileSnapshot>())
              : Effect.fail(unavailable))
        )
        const profile = Option.getOrUndefined(Option.map(snapshot, (s) => s.profile))
        clock.mark("profile")
        const { messages, receipt } = Option.isSome(snapshot)
          ? yield* inject(request, snapshot.value, definitions).pipe(Effect.provideContext(services))
          : { messages: request.messages, receipt: "unavailable" as const }
        clock.mark("inject")
        const body = yield* host.beforeForward({ profile, userId, body: { ...request.body, messages } })
        clock.mark("forward")

        const reply = yield* upstream.chat(target, body, {
          headers: forwardedHeaders(input.headers),
          includeUsage: request.includeUsage
        })
        clock.mark("upstream")
        const owner: TurnOwner = profile === undefined
          ? { _tag: "Deferred", userId, findProfile: Effect.map(profiles.getOrCreate(userId), ({ profile }) => profile.id) }
          : { _tag: "Known", profile }
        // Submits the turn and waits until it is written, unless (or until) the database is
        // unavailable: then the turn waits in memory. A turn that cannot be recorded never fails the answer.
        const recordDurably = (reply: AssembledReply | undefined) =>
          reply === undefined ? Effect.void : submitTurn(request, owner, input.requestId, reply).pipe(
            Effect.flatMap((pending) => Effect.raceFirst(Effect.asVoid(pending.written), health.whenUnavailable)),
            Effect.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause) ? Effect.interrupt : Effect.logError("turn not recorded", cause)
            ),
            Effect.provideContext(services)
          )

        // A non-streamed answer is recorded before anything is sent: its overhead includes the commit.
        if (reply._tag === "Body" && reply.status === 200) yield* recordDurably(replyOfCompletion(reply.body))
        const overheadMs = clock.total() - clock.stage("upstream")
        yield* Metric.update(upstreamResponseTimeOf({ provider: target.provider }), clock.stage("upstream") / 1000)
        yield* Metric.update(overheadTime, overheadMs / 1000)
        yield* Effect.logDebug("completion stages", { ...clock.stages(), overheadMs })
        const headers = {
          ...reply.headers,
          [CONTEXT_HEADER]: receiptHeader(profile?.id ?? null, receipt),
          [MEMORY_HEADER]: profile === undefined ? "unavailable" : "available",
          // Time spent in the gateway before the provider was called (and, non-streaming, after it answered).
          [OVERHEAD_HEADER]: overheadMs.toFixed(2)
        }
        if (reply._tag === "Body") return { ...reply, headers }

        const assembler = makeStreamAssembler()
        let relayedFirst = false
        let recorded = false
        const events = reply.events.pipe(
          // The chunk that completes the answer (`[DONE]`) goes out once the turn is written.
          Stream.mapEffect((chunk) =>
            Effect.suspend(() => {
              assembler.feed(chunk)
              const first = relayedFirst ? Effect.void : Metric.update(streamFirstChunkTime, clock.total() / 1000)
              relayedFirst = true
              if (recorded || !assembler.isComplete()) return Effect.as(first, chunk)
              recorded = true
              return first.pipe(Effect.andThen(recordDurably(assembler.reply())), Effect.as(chunk))
            })
          ),
          // A stream still running when shutdown's drain ends is ended with an error event.
          Stream.interruptWhen(draining.streamsEnd),
          // A stream that fails (or whose client disconnects) before its end is not recorded.
          Stream.catchTags({
            UpstreamStreamError: (error) => Stream.succeed(errorEvent(error.code, error.message)),
            ShuttingDown: () =>
              Stream.succeed(errorEvent("server_shutting_down", "The gateway is shutting down; the answer was cut short"))
          })
        )
        return { ...reply, headers, events }
      })

      return Completion.of({ complete })
    })
  )
}
