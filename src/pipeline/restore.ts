import { Effect, Option } from "effect"
import type { ApiAdapter, Outbound } from "../apis/ApiAdapter.ts"
import type { ChatRequest } from "../apis/ChatRequest.ts"
import { Background } from "../background/Background.ts"
import { DatabaseConfig } from "../db/DatabaseConfig.ts"
import { DatabaseHealth } from "../db/DatabaseHealth.ts"
import type { Profile } from "../domain/Profile.ts"
import { requestStage } from "../observability/requestSpan.ts"
import { restoreThread, withRestored } from "../threads/restoreThread.ts"
import { ThreadsConfig } from "../threads/ThreadsConfig.ts"
import { ThreadsRepo } from "../threads/ThreadsRepo.ts"
import type { UpstreamProvider } from "../upstream/UpstreamConfig.ts"

/** What the receipt (`X-Service-Context`) says of the request's thread. */
export interface ThreadReceipt {
  readonly id: string
  /** Earlier messages of the thread put before the request's own, verbatim (the window of latest turns). */
  readonly restored: number
  /** Messages of older turns relevant to the new message, in the stage's `note` (not among the restored). */
  readonly relevant: number
  /** Whether the thread's summary of the turns before the window went too. */
  readonly summary: boolean
  /** Messages the client sent itself that the thread ended with (not restored twice). */
  readonly matched: number
  /** Earlier messages that went neither verbatim nor in the note (the summary's, and those left out for `THREAD_MAX_TOKENS`). */
  readonly omitted: number
  /** Why nothing was restored, when the thread has history: the client's history differs, or the store is unavailable. */
  readonly skipped?: "history_differs" | "unavailable"
}

/** What the restore stage gives the next ones. */
export interface Restored {
  /** The request as the provider gets it, the thread's summary and window of latest turns before its own messages. */
  readonly outbound: Outbound
  readonly thread: ThreadReceipt
  /**
   * Older turns relevant to the new message, as one text: it changes with every message, so it goes
   * with the request's per-turn context, not in the history (which keeps the provider's prompt cache).
   */
  readonly note: string | undefined
}

/**
 * Stage 2½ for a chat completion with a thread id: the thread's earlier turns, within
 * `THREAD_MAX_TOKENS` (a window of the latest verbatim, moving in steps, and the summary of the turns
 * before it: `restoreThread`), go to the provider before the request's own (after its system
 * messages), unless the client sent that history itself; the older turns relevant to the new message
 * come back apart, as `note`. When the summary does not reach the window's next start yet, a `thread`
 * job is queued. Memory is still ranked on, and the turn recorded from, the request's own messages.
 * Without the database the request goes on without the thread's history (with `FAIL_OPEN=false`: 503).
 */
export const makeRestore = Effect.gen(function* () {
  const threads = yield* ThreadsRepo
  const background = yield* Background
  const health = yield* DatabaseHealth
  const { failOpen } = yield* DatabaseConfig
  const { maxTokens } = yield* ThreadsConfig
  return Effect.fnUntraced(function* (
    adapter: ApiAdapter,
    request: ChatRequest,
    threadId: string,
    provider: UpstreamProvider,
    outbound: Outbound,
    profile: Profile | undefined
  ) {
    const unavailable: Restored = {
      outbound,
      thread: {
        id: threadId,
        restored: 0,
        relevant: 0,
        summary: false,
        matched: 0,
        omitted: 0,
        skipped: "unavailable"
      },
      note: undefined
    }
    if (profile === undefined) return unavailable
    const stored = yield* health
      .guard(Effect.asSome(threads.latest(profile.id, threadId)))
      .pipe(Effect.catchTag("DatabaseUnavailable", (error) => (failOpen ? Effect.succeedNone : Effect.fail(error))))
    if (Option.isNone(stored)) return unavailable
    const restoration = restoreThread(stored.value.messages, request.messages, maxTokens, stored.value.digest)
    // The summary does not reach the window's next start yet: the worker rewrites it up to there, off the request's path.
    const { summarizeUntil } = restoration
    if (summarizeUntil !== undefined)
      yield* background.run("thread-summary", threads.queueSummary(profile.id, threadId, summarizeUntil))
    const thread: ThreadReceipt = {
      id: threadId,
      restored: restoration.restored,
      relevant: restoration.relevant,
      summary: restoration.summarized,
      matched: restoration.matched,
      omitted: restoration.omitted,
      ...(restoration.historyDiffers ? { skipped: "history_differs" as const } : {})
    }
    const { note } = restoration
    if (restoration.messages.length === 0) return { outbound, thread, note }
    const messages = request.body["messages"]
    const body = {
      ...request.body,
      messages: withRestored(Array.isArray(messages) ? messages : [], restoration.messages)
    }
    return { outbound: yield* Effect.fromResult(adapter.outbound({ ...request, body }, provider)), thread, note }
  }, requestStage("pipeline.restore"))
})
