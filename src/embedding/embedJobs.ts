import { Effect } from "effect"
import { type JobHandler, retryable } from "../jobs/JobHandler.ts"
import type { ClaimedJob } from "../jobs/JobQueue.ts"
import { profileLine } from "../jobs/profileLine.ts"
import { Embedder } from "./Embedder.ts"
import { MemoryEmbedding } from "./MemoryEmbedding.ts"

/**
 * `embed` jobs: the vectors of a profile's memories that have none for the current model. A line
 * of their own (`EMBEDDING_CONCURRENCY` loops, none with embeddings off, no hourly budget), so they
 * never wait behind a profile's extraction jobs nor hold them up. Batches commit one by one (a job
 * cut short resumes), so only the completion is left for the job's transaction.
 */
export const embedJobs = Effect.gen(function* () {
  const embedder = yield* Embedder
  const embedding = yield* MemoryEmbedding
  const line = yield* profileLine({
    name: "embed",
    loops: embedder.model === undefined ? 0 : embedder.settings.concurrency,
    profileJobsPerHour: 0,
    ...(embedder.model === undefined ? {} : { runsOn: `embedding model ${embedder.model}` })
  })
  const handler: JobHandler<ClaimedJob> = {
    kind: "embed",
    line,
    run: (job) =>
      embedding.run(job).pipe(
        Effect.map((result) => ({ apply: Effect.succeed(result) })),
        Effect.mapError(retryable)
      )
  }
  return [handler]
})
