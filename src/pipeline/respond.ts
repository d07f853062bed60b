import { Effect, Metric, type Scope, Stream } from "effect"
import * as Sse from "effect/encoding/Sse"
import type { ApiAdapter } from "../apis/ApiAdapter.ts"
import type { ProxiedApi } from "../apis/ChatRequest.ts"
import { Draining } from "../background/Draining.ts"
import type { BudgetRemaining } from "../budgets/Budgets.ts"
import type { TokenUsage } from "../domain/TokenUsage.ts"
import {
  BUDGET_HEADER,
  CONTEXT_HEADER,
  MEMORY_HEADER,
  OVERHEAD_HEADER,
  UPSTREAM_HEADER
} from "../http/serviceHeaders.ts"
import { type InjectionReceipt, receiptJson } from "../injection/receipt.ts"
import { labelled, overheadTime, streamFirstChunkTime, upstreamResponseTime } from "../observability/metrics.ts"
import { StageTimings } from "../observability/requestSpan.ts"
import { UpstreamStreamError } from "../providers/errors.ts"
import { type AssembledReply, makeStreamAssembler } from "../providers/openai/StreamAssembler.ts"
import type { StreamPiece } from "../providers/openai/stream.ts"
import type { ServedBy } from "../routing/UpstreamRouter.ts"
import { UPSTREAM_CHAT_SPAN } from "../upstream/Upstream.ts"
import type { UpstreamProvider } from "../upstream/UpstreamConfig.ts"
import type { UpstreamReply } from "../upstream/UpstreamReply.ts"
import { UsageRecorder } from "../usage/UsageRecorder.ts"
import type { ThreadReceipt } from "./restore.ts"
import { millisSince } from "./stageTimings.ts"
import { countTokens } from "./tokenMetrics.ts"

const encoder = new TextEncoder()

const upstreamResponseTimeOf = labelled(upstreamResponseTime)

/** Whose an answer's tokens are: the request's namespace, its key held in the database, its user and model. */
export interface UsageOwner {
  readonly namespace: string
  readonly keyId: string | undefined
  readonly userId: string | undefined
  readonly model: string
}

/** The gateway's headers on an answer: what was injected, whether memory was available, its overhead. */
export const answerHeaders = (
  providerHeaders: Readonly<Record<string, string>>,
  profileId: string | undefined,
  receipt: InjectionReceipt | "unavailable",
  overheadMs: number,
  thread?: ThreadReceipt,
  served?: ServedBy
): Record<string, string> => ({
  ...providerHeaders,
  [CONTEXT_HEADER]: JSON.stringify({
    ...receiptJson(profileId ?? null, receipt),
    ...(thread === undefined ? {} : { thread }),
    ...(served === undefined ? {} : { upstream: upstreamReceipt(served) })
  }),
  ...(served === undefined ? {} : { [UPSTREAM_HEADER]: served.target }),
  [MEMORY_HEADER]: profileId === undefined ? "unavailable" : "available",
  // Time spent in the gateway before the provider was called (and, non-streaming, after it answered).
  [OVERHEAD_HEADER]: overheadMs.toFixed(2)
})

/** Which target answered, after how many attempts (and, routed, the route and the targets given up on). */
const upstreamReceipt = (served: ServedBy) => ({
  target: served.target,
  attempts: served.attempts,
  ...(served.route === undefined ? {} : { route: served.route, fallbacks: served.fallbacks })
})

/** `X-Service-Budget-Remaining`: `tokens=N`, `cost=X`, or both; none when the request is under no budget. */
const budgetHeader = (remaining: BudgetRemaining | undefined): Record<string, string> => {
  if (remaining === undefined) return {}
  const parts = [
    ...(remaining.tokens === undefined ? [] : [`tokens=${remaining.tokens}`]),
    ...(remaining.cost === undefined ? [] : [`cost=${Number(remaining.cost.toFixed(6))}`])
  ]
  return parts.length === 0 ? {} : { [BUDGET_HEADER]: parts.join(", ") }
}

/** The in-band end of a stream that failed after it started: an SSE `error` event in the client's API's shape. */
const errorEvent = (adapter: ApiAdapter, code: string, message: string): StreamPiece => ({
  bytes: encoder.encode(
    Sse.encoder.write({
      _tag: "Event",
      event: "error",
      id: undefined,
      data: JSON.stringify(adapter.streamError(code, message))
    })
  ),
  events: []
})

/** How a stream still running when shutdown's drain ends is cut. */
const shuttingDown = new UpstreamStreamError({
  code: "server_shutting_down",
  message: "The gateway is shutting down; the answer was cut short"
})

/**
 * A stream's answer: the provider's pieces relayed as they arrive, the one that completes the
 * answer (`[DONE]`) held until `record` has written the turn. A stream still running when shutdown's
 * drain ends (`whenStreamsEnd`: its provider stream is cut), or that fails after it started, ends with
 * an in-band error event, its turn recorded as far as it went and marked incomplete (never extracted);
 * one whose client hangs up before its end is not recorded. The
 * usage it carried (the last, should a provider send more than one; `undefined`: none) goes to `usage`
 * once it has ended, however it ended.
 */
export const relayStream = (
  adapter: ApiAdapter,
  stream: {
    readonly pieces: Stream.Stream<StreamPiece, UpstreamStreamError>
    readonly cut: (error: UpstreamStreamError) => void
  },
  options: {
    /** When the request started (its span's start, for the time to the first chunk). */
    readonly started: bigint
    readonly record: (reply: AssembledReply) => Effect.Effect<void>
    /** Records a turn whose answer broke off after it started, as far as it went. */
    readonly recordIncomplete: (reply: AssembledReply) => Effect.Effect<void>
    readonly keep: Effect.Effect<void>
    readonly usage: (usage: TokenUsage | undefined) => Effect.Effect<void>
    readonly whenStreamsEnd: (end: () => void) => Effect.Effect<void, never, Scope.Scope>
  }
): Stream.Stream<StreamPiece> => {
  const assembler = makeStreamAssembler()
  let relayedFirst = false
  let recorded = false
  let kept = false
  let usage: TokenUsage | undefined
  let usageCounted = false
  // Counted with the piece that ends the stream (its usage came before), so the client's next request
  // finds it in its budget; else however the stream ended.
  const countUsage = Effect.suspend(() => {
    if (usageCounted) return Effect.void
    usageCounted = true
    return options.usage(usage)
  })
  const relayed = stream.pieces.pipe(
    Stream.mapEffect((piece) =>
      Effect.suspend(() => {
        for (const event of piece.events) assembler.add(event)
        usage = piece.usage ?? usage
        // A piece may relay no bytes (a reader that relays whole events, an event it drops): not a first chunk.
        const first =
          relayedFirst || piece.bytes.length === 0
            ? Effect.void
            : Effect.flatMap(millisSince(options.started), (ms) => Metric.update(streamFirstChunkTime, ms / 1000))
        relayedFirst ||= piece.bytes.length > 0
        const record = recorded || !assembler.isComplete() ? Effect.void : options.record(assembler.reply())
        recorded ||= assembler.isComplete()
        // The whole answer object exists once the stream's end has been written (after its finish reason).
        const ended = !kept && piece.events.some((event) => event._tag === "Done")
        kept ||= ended
        return first.pipe(
          Effect.andThen(record),
          Effect.andThen(ended ? Effect.andThen(options.keep, countUsage) : Effect.void),
          Effect.as(piece)
        )
      })
    ),
    Stream.catchTag("UpstreamStreamError", (error) =>
      // What came before the break is kept, marked incomplete (never learned from), before the client hears of it.
      Stream.fromEffect(
        Effect.as(
          recorded || !assembler.started() ? Effect.void : options.recordIncomplete(assembler.reply()),
          errorEvent(adapter, error.code, error.message)
        )
      )
    ),
    Stream.ensuring(countUsage)
  )
  // Registered for as long as the stream runs.
  return Stream.unwrap(
    Effect.as(
      options.whenStreamsEnd(() => stream.cut(shuttingDown)),
      relayed
    )
  )
}

/**
 * Stage 5: the answer as the client gets it, with the gateway's headers. A whole answer is recorded
 * before it is sent (its overhead includes the commit); a stream is relayed with its end held for
 * the record. The time spent outside the provider call goes to the header, the metrics and the
 * debug log, with each stage's own.
 */
export const makeRespond = Effect.gen(function* () {
  const draining = yield* Draining
  const recorder = yield* UsageRecorder
  return Effect.fnUntraced(function* (
    adapter: ApiAdapter,
    reply: UpstreamReply,
    turn: {
      /** When the request started (its span's start). */
      readonly started: bigint
      readonly provider: UpstreamProvider
      /** The API the provider was called by (the outbound's: a request translated for Anthropic is `messages`). */
      readonly api: ProxiedApi
      readonly profileId: string | undefined
      readonly receipt: InjectionReceipt | "unavailable"
      /** What was restored of the request's thread, if it names one. */
      readonly thread: ThreadReceipt | undefined
      /** Which target answered, after how many attempts. */
      readonly served: ServedBy
      readonly record: (reply: AssembledReply, incomplete?: boolean) => Effect.Effect<void>
      /** Stores the whole answer object where it is kept (a Responses response the gateway keeps). */
      readonly keep: Effect.Effect<void>
      /** Whose tokens the answer's are. */
      readonly owner: UsageOwner
      /** What is left of the budgets the request is under. */
      readonly budget: BudgetRemaining | undefined
    }
  ) {
    const injected = turn.receipt === "unavailable" || turn.receipt.skipped ? 0 : turn.receipt.estimatedTokens
    // The answer's usage, read once where the answer was read, meets the turn here: counted once per answer.
    const countUsage = (usage: TokenUsage | undefined) =>
      Effect.andThen(
        usage === undefined ? Effect.void : countTokens({ provider: turn.provider, api: turn.api }, usage),
        recorder.record(
          {
            ...turn.owner,
            work: "app",
            profileId: turn.profileId,
            provider: turn.provider,
            api: turn.api,
            usage,
            injected
          },
          { promptly: turn.budget !== undefined }
        )
      )
    if (reply._tag === "Body" && reply.status === 200) {
      const answer = adapter.replyOf(reply.json)
      if (answer !== undefined) yield* Effect.andThen(turn.record(answer), turn.keep)
      yield* countUsage(reply.usage)
    } else if (reply._tag === "Body" && reply.usage !== undefined) yield* countUsage(reply.usage)
    const timings = (yield* StageTimings) ?? new Map<string, number>()
    const upstreamMs = timings.get(UPSTREAM_CHAT_SPAN) ?? 0
    const overheadMs = (yield* millisSince(turn.started)) - upstreamMs
    yield* Metric.update(upstreamResponseTimeOf({ provider: turn.provider }), upstreamMs / 1000)
    yield* Metric.update(overheadTime, overheadMs / 1000)
    yield* Effect.logDebug("completion stages", { ...Object.fromEntries(timings), overheadMs })
    const headers = {
      ...answerHeaders(reply.headers, turn.profileId, turn.receipt, overheadMs, turn.thread, turn.served),
      ...budgetHeader(turn.budget)
    }
    if (reply._tag === "Body") return { ...reply, headers }
    const pieces = relayStream(adapter, reply, {
      started: turn.started,
      record: turn.record,
      recordIncomplete: (reply) => turn.record(reply, true),
      keep: turn.keep,
      usage: countUsage,
      whenStreamsEnd: draining.whenStreamsEnd
    })
    return { ...reply, headers, pieces }
  })
})
