import { Context, Effect, Layer } from "effect"
import { type JobError, type JobLine, permanent, retryable } from "../jobs/JobHandler.ts"
import type { ClaimedJob } from "../jobs/JobQueue.ts"
import { JobQueue } from "../jobs/JobQueue.ts"
import { JobSettings } from "../jobs/JobSettings.ts"
import { profileLine } from "../jobs/profileLine.ts"
import { ExtractionConfig } from "./ExtractionConfig.ts"
import type { ExtractionKeyRevoked } from "./ExtractionCredentials.ts"
import { type ExtractionCallFailed, ExtractionModel } from "./ExtractionModel.ts"

/** A failed model call may go next time; a revoked key stays revoked, so its job fails for good. */
export const modelJobError = (error: ExtractionCallFailed | ExtractionKeyRevoked): JobError =>
  error._tag === "ExtractionKeyRevoked" ? permanent(error) : retryable(error)

/**
 * The line of the jobs that call the extraction model (turn, ingest, summary, cues, thread): its
 * loops (`EXTRACTION_CONCURRENCY`, none without the model's key) and each profile's hourly budget
 * (`EXTRACTION_JOBS_PER_PROFILE_PER_HOUR`). One object, shared by those kinds' handlers.
 */
export class ExtractionLine extends Context.Service<ExtractionLine, JobLine<ClaimedJob>>()(
  "gateway/extraction/ExtractionLine"
) {
  static readonly layer = Layer.effect(
    ExtractionLine,
    Effect.gen(function* () {
      const config = yield* ExtractionConfig
      const model = yield* ExtractionModel
      if (!model.available || config.concurrency === 0) {
        yield* Effect.logWarning(
          config.concurrency === 0
            ? "extraction worker off (EXTRACTION_CONCURRENCY=0): jobs stay queued for other replicas"
            : "extraction worker off: no EXTRACTION_API_KEY or UPSTREAM_API_KEY; jobs stay queued until one is set"
        )
      }
      return yield* profileLine({
        name: "extract",
        loops: model.available ? config.concurrency : 0,
        profileJobsPerHour: config.profileJobsPerHour,
        ...(model.available ? { runsOn: `extraction model ${config.model}` } : {})
      })
    })
  ).pipe(Layer.provide([JobQueue.layer, ExtractionModel.layer]))

  /** The worker's pace and a profile's lease and retries are the extraction section's settings. */
  static readonly jobSettings = Layer.effect(
    JobSettings,
    Effect.gen(function* () {
      const config = yield* ExtractionConfig
      return JobSettings.of({
        pollMs: config.pollMs,
        shutdownGraceMs: config.shutdownGraceMs,
        leaseMs: config.leaseMs,
        retry: { maxAttempts: config.maxAttempts, retryBaseMs: config.retryBaseMs, retryMaxMs: config.retryMaxMs }
      })
    })
  )
}
