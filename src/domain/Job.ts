import { Schema } from "effect"

export const JobStatus = Schema.Literals(["pending", "running", "succeeded", "failed"])
export type JobStatus = typeof JobStatus.Type

/**
 * `turn`: a recorded chat turn; `ingest`: text posted to the ingest endpoint; `summary`: rewrite the
 * summary; `embed`: compute the vectors of the profile's memories that have none for the current model;
 * `cues`: have the extraction model write cues for memories that were written without them;
 * `webhook`: deliver one event to one webhook; `thread`: rewrite a thread's rolling summary.
 */
export const JobKind = Schema.Literals(["turn", "ingest", "summary", "embed", "cues", "webhook", "thread"])
export type JobKind = typeof JobKind.Type

/**
 * Why a pending job has not run yet: `queued` (waits for a worker), `deferred` (its profile started
 * `EXTRACTION_JOBS_PER_PROFILE_PER_HOUR` jobs in the last hour; it runs at `runAfter`), `retrying` (an
 * attempt failed; the next is at `runAfter`).
 */
export const JobWaitReason = Schema.Literals(["queued", "deferred", "retrying"])
export type JobWaitReason = typeof JobWaitReason.Type

/** A row of the queue, as the worker reads it. */
export const jobRecordFields = {
  id: Schema.String,
  /** The profile the job works on; `null` for a webhook delivery (its event names the profile, which may be erased). */
  profileId: Schema.NullOr(Schema.String),
  /** The webhook a delivery is for; `null` for every other kind. */
  webhookId: Schema.NullOr(Schema.String),
  kind: JobKind,
  status: JobStatus,
  attempts: Schema.Int,
  lastError: Schema.NullOr(Schema.String),
  /** What the job did: counts of traits and memories written, the summary version. */
  result: Schema.NullOr(Schema.Json),
  runAfter: Schema.DateTimeUtcFromDate,
  createdAt: Schema.DateTimeUtcFromDate,
  updatedAt: Schema.DateTimeUtcFromDate,
  finishedAt: Schema.NullOr(Schema.DateTimeUtcFromDate)
}

/** A queued job as operators see it: the row, whose user it works for, and why it waits. */
export class Job extends Schema.Class<Job>("Job")({
  ...jobRecordFields,
  /**
   * The user id of the job's profile; for a webhook delivery, of the profile its event is about
   * (which may have been erased since: `profileId` stays `null`, the webhook is `webhookId`).
   */
  externalId: Schema.NullOr(Schema.String),
  /** Why a pending job has not run yet; `null` unless pending. */
  waitReason: Schema.NullOr(JobWaitReason)
}) {}

/** Whether the job is done, one way or the other: nothing will run it again unless an operator retries it. */
export const hasFinished = (job: Job): boolean => job.status === "succeeded" || job.status === "failed"
