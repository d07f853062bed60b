import { Context, Effect, Layer, Option } from "effect"
import { decodeSummary } from "../extraction/decodeReply.ts"
import { type ExtractionCallFailed, ExtractionModel } from "../extraction/ExtractionModel.ts"
import { threadSummaryMessages } from "../extraction/prompts.ts"
import type { ClaimedJob } from "../jobs/JobQueue.ts"
import type { ThreadMessage } from "./restoreThread.ts"
import { ThreadsRepo } from "./ThreadsRepo.ts"

/** How many messages one job folds into the summary: a longer backlog is summarized over several jobs. */
const MESSAGES_PER_JOB = 200
/** How much of one message goes to the model (the summary keeps the gist, not every word). */
const MAX_MESSAGE_CHARS = 4000

/**
 * The messages a job folds in, ending where a turn ends: a summary that ends within a turn could not be
 * shown before any window of whole turns. Only a batch cut short of `until` (by `MESSAGES_PER_JOB`)
 * may end within one; it keeps the turns before the last one it began (all of it, if it began none).
 */
const upToTurn = (messages: ReadonlyArray<ThreadMessage>, until: number): ReadonlyArray<ThreadMessage> => {
  if (messages.length === 0 || messages.at(-1)!.createdAt >= until) return messages
  const lastTurn = messages.findLastIndex((message) => message.role === "user")
  return lastTurn > 0 ? messages.slice(0, lastTurn) : messages
}

/** What a `thread` job did, kept on the job row. */
export interface ThreadSummaryResult {
  /** Messages folded into the summary. */
  readonly summarized: number
  /** Why nothing was written, when nothing was. */
  readonly dropped: ReadonlyArray<string>
}

/**
 * Runs `thread` jobs: the extraction model rewrites a thread's rolling summary with the turns that
 * came after it, up to the time the job names (the last message before the restore window's next
 * start, so the summary ends where the window will begin). The model
 * call runs outside any transaction; the summary is written with the job's completion. A backlog
 * longer than a job's share is folded in over the next jobs (restores queue them while it lasts).
 */
export class ThreadSummarizer extends Context.Service<
  ThreadSummarizer,
  {
    readonly plan: (
      job: ClaimedJob
    ) => Effect.Effect<{ readonly apply: Effect.Effect<ThreadSummaryResult> }, ExtractionCallFailed>
  }
>()("gateway/threads/ThreadSummarizer") {
  static readonly layer = Layer.effect(
    ThreadSummarizer,
    Effect.gen(function* () {
      const store = yield* ThreadsRepo
      const model = yield* ExtractionModel
      const nothing = (reason: string) => ({ apply: Effect.succeed({ summarized: 0, dropped: [reason] }) })

      const plan = Effect.fn("ThreadSummarizer.plan")(function* (job: ClaimedJob) {
        const input = job.input
        if (input === null || !("threadId" in input)) return nothing("the job names no thread")
        const { profileId } = job
        const until = new Date(input.until)
        const { digest, messages: read } = yield* store.unsummarized(profileId, input.threadId, until, MESSAGES_PER_JOB)
        const messages = upToTurn(read, until.getTime())
        const last = messages.at(-1)
        if (last === undefined) return nothing("the summary already covers these turns")
        const reply = yield* model.complete(
          threadSummaryMessages({
            previousSummary: digest?.text ?? null,
            turns: messages.map((message) => ({
              role: message.role,
              content: message.content.slice(0, MAX_MESSAGE_CHARS)
            }))
          }),
          { work: "thread_summary" }
        )
        return Option.match(decodeSummary(reply), {
          onNone: () => nothing("the reply has no usable summary"),
          onSome: (text) => ({
            apply: Effect.as(store.writeSummary(profileId, input.threadId, { text, until: last.createdAt }), {
              summarized: messages.length,
              dropped: []
            })
          })
        })
      })

      return ThreadSummarizer.of({ plan })
    })
  ).pipe(Layer.provide([ExtractionModel.layer, ThreadsRepo.layer]))
}
