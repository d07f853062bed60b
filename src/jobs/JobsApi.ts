import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Job, JobStatus } from "../domain/Job.ts"
import { ApiValidation } from "../http/ApiValidation.ts"
import { Limit } from "../http/apiFields.ts"
import { Conflict, NotFound } from "../http/OpenAiError.ts"

export const WorkerStats = Schema.Struct({
  running: Schema.Boolean,
  loops: Schema.Int,
  /** Turns of the loops that found no job to claim: rising while the process is idle. */
  idlePolls: Schema.Int,
  claimed: Schema.Int,
  succeeded: Schema.Int,
  retried: Schema.Int,
  failed: Schema.Int,
  released: Schema.Int,
  leaseLost: Schema.Int,
  inFlight: Schema.Int
})

/** `/api/jobs`: the extraction queue, its jobs and the worker's counters. */
export class JobsGroup extends HttpApiGroup.make("jobs")
  .add(
    HttpApiEndpoint.get("overview", "/", {
      query: { status: Schema.optionalKey(JobStatus), limit: Schema.optionalKey(Limit) },
      success: Schema.Struct({
        counts: Schema.Struct({ pending: Schema.Int, running: Schema.Int, succeeded: Schema.Int, failed: Schema.Int }),
        oldestPendingSeconds: Schema.NullOr(Schema.Finite),
        jobs: Schema.Array(Job),
        worker: WorkerStats
      })
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Extraction queue overview",
        description:
          "Queue counts, the age of the oldest pending job, this process's worker counters, and the " +
          "latest jobs of `status` (default: the latest failures)."
      })
    ),
    HttpApiEndpoint.get("get", "/:jobId", {
      params: { jobId: Schema.String },
      success: Schema.Struct({ job: Job }),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Read an extraction job" })),
    HttpApiEndpoint.post("retry", "/:jobId/retry", {
      params: { jobId: Schema.String },
      success: Schema.Struct({ job: Job }),
      error: [NotFound, Conflict]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Retry a failed job",
        description:
          "Put a failed job back in the queue, with its attempts anew; the workers take it at once. 409 unless it had failed."
      })
    )
  )
  .prefix("/api/jobs")
  .middleware(ApiValidation)
  .annotateMerge(
    OpenApi.annotations({ description: "The extraction queue: what is learned from recorded turns, in the background" })
  ) {}
