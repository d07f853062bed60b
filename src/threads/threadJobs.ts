import { Effect } from "effect"
import { ExtractionLine, modelJobError } from "../extraction/ExtractionLine.ts"
import type { JobHandler } from "../jobs/JobHandler.ts"
import type { ClaimedJob } from "../jobs/JobQueue.ts"
import { ThreadSummarizer } from "./ThreadSummarizer.ts"

/** `thread` jobs: a thread's rolling summary rewritten by the extraction model, on its line. */
export const threadJobs = Effect.gen(function* () {
  const summarizer = yield* ThreadSummarizer
  const handler: JobHandler<ClaimedJob> = {
    kind: "thread",
    line: yield* ExtractionLine,
    run: (job) => summarizer.plan(job).pipe(Effect.mapError(modelJobError))
  }
  return [handler]
})
