import { Context, Effect, Exit, Layer, Metric, Option, Result, Stream } from "effect"
import * as Sse from "effect/encoding/Sse"
import { Background } from "../background/Background.ts"
import { labelled, overheadTime, streamFirstChunkTime, upstreamResponseTime } from "../observability/metrics.ts"
import { AppConfig } from "../config/AppConfig.ts"
import { Retrieval } from "../retrieval/Retrieval.ts"
import { ContextCache } from "../store/ContextCache.ts"
import { MemoryAccess } from "../store/MemoryAccess.ts"
import { ProfileStore } from "../store/ProfileStore.ts"
import { TurnStore } from "../store/TurnStore.ts"
import { TraitSchema } from "../traits/TraitSchema.ts"
import type { UpstreamFailure, UpstreamStreamError } from "../upstream/errors.ts"
import { Upstream, type UpstreamReply } from "../upstream/Upstream.ts"
import { checkUserId, parseChatRequest, takenUserId } from "./ChatRequest.ts"
import { InvalidChatRequest, type MissingUpstreamKey, MissingUserId } from "./errors.ts"
import type { PluginRejection } from "../plugins/Plugin.ts"
import { type PluginFailed, PluginHost } from "../plugins/PluginHost.ts"
import type { RateLimitExceeded } from "../ratelimit/RateLimitExceeded.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { inject, type InjectionReceipt } from "./inject.ts"
import { recordTurn, replyOfCompletion } from "./record.ts"
import { forwardedHeaders, selectUpstream } from "./selectUpstream.ts"
import { type AssembledReply, makeStreamAssembler } from "./StreamAssembler.ts"

export const CONTEXT_HEADER = "x-service-context"
export const OVERHEAD_HEADER = "x-service-overhead-ms"

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
const errorEvent = (error: UpstreamStreamError) =>
  encoder.encode(
    Sse.encoder.write({
      _tag: "Event",
      event: "error",
      id: undefined,
      data: JSON.stringify({ error: { message: error.message, type: "upstream_error", code: error.code, param: null } })
    })
  )

const receiptHeader = (profileId: string, receipt: InjectionReceipt) =>
  JSON.stringify(
    receipt.skipped
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
 * The answer goes back as the provider sent it; recording happens after, in the background.
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
      const services = Context.make(AppConfig, config).pipe(
        Context.add(PluginHost, host),
        Context.add(MemoryAccess, yield* MemoryAccess),
        Context.add(Retrieval, yield* Retrieval),
        Context.add(TurnStore, yield* TurnStore),
        Context.add(Background, background)
      )

      /**
       * The user's profile and what injection needs of it: from the cache when possible (no query
       * at all), else created if new and read in one round trip (and cached).
       */
      const snapshotOf = (userId: string) =>
        Effect.flatMap(cache.lookup(userId), Option.match({
          onSome: Effect.succeed,
          onNone: () =>
            profiles.getOrCreate(userId).pipe(
              Effect.catchTag("ExternalIdConflict", (conflict) => Effect.fail(takenUserId(conflict))),
              Effect.flatMap(({ profile }) => cache.load(profile))
            )
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
        const snapshot = yield* snapshotOf(userId)
        const { profile } = snapshot
        clock.mark("profile")
        const { messages, receipt } = yield* inject(request, snapshot, definitions).pipe(Effect.provideContext(services))
        clock.mark("inject")
        const body = yield* host.beforeForward({ profile, body: { ...request.body, messages } })
        clock.mark("forward")

        const reply = yield* upstream.chat(target, body, {
          headers: forwardedHeaders(input.headers),
          includeUsage: request.includeUsage
        })
        clock.mark("upstream")
        const overheadMs = clock.total() - clock.stage("upstream")
        yield* Metric.update(upstreamResponseTimeOf({ provider: target.provider }), clock.stage("upstream") / 1000)
        yield* Metric.update(overheadTime, overheadMs / 1000)
        yield* Effect.logDebug("completion stages", { ...clock.stages(), overheadMs })
        const headers = {
          ...reply.headers,
          [CONTEXT_HEADER]: receiptHeader(profile.id, receipt),
          // Time spent in the gateway before the provider was called (and, non-streaming, after it answered).
          [OVERHEAD_HEADER]: overheadMs.toFixed(2)
        }
        // Recording (parsing included) happens after the answer has gone out, off the request path.
        const record = (answer: () => AssembledReply | undefined) =>
          background.run(
            "record-turn",
            Effect.suspend(() => {
              const reply = answer()
              return reply === undefined ? Effect.void : recordTurn(request, profile, input.requestId, reply)
            }).pipe(Effect.provideContext(services))
          )

        if (reply._tag === "Body") {
          if (reply.status === 200) yield* record(() => replyOfCompletion(reply.body))
          return { ...reply, headers }
        }

        const assembler = makeStreamAssembler()
        let failed = false
        let relayedFirst = false
        const events = reply.events.pipe(
          Stream.tap((chunk) =>
            Effect.suspend(() => {
              assembler.feed(chunk)
              if (relayedFirst) return Effect.void
              relayedFirst = true
              return Metric.update(streamFirstChunkTime, clock.total() / 1000)
            })
          ),
          Stream.catchTag("UpstreamStreamError", (error) => {
            failed = true
            return Stream.succeed(errorEvent(error))
          }),
          // A client that disconnects interrupts the stream (and the upstream request): nothing is recorded.
          Stream.onExit((exit) =>
            Exit.isSuccess(exit) && !failed && assembler.isComplete() ? record(assembler.reply) : Effect.void
          )
        )
        return { ...reply, headers, events }
      })

      return Completion.of({ complete })
    })
  )
}
