import { Effect, Option, Schedule } from "effect"
import { hasFinished } from "../domain/Job.ts"
import { JobQueue } from "./JobQueue.ts"

/** How often the wait looks at the job. */
const WAIT_POLL = "100 millis"

/**
 * The job once it has finished, or as it is when `timeoutMs` runs out (an ingest's `?wait=true`). A job
 * gone meanwhile (its profile deleted) is `JobNotFound`.
 */
export const awaitJob = Effect.fn("JobQueue.await")(function* (jobId: string, timeoutMs: number) {
  const queue = yield* JobQueue
  const finished = yield* queue
    .get(jobId)
    .pipe(Effect.repeat({ schedule: Schedule.spaced(WAIT_POLL), until: hasFinished }), Effect.timeoutOption(timeoutMs))
  return Option.isSome(finished) ? finished.value : yield* queue.get(jobId)
})
