import { type Effect, type Option, Schema } from "effect"
import type { JobKind } from "../domain/Job.ts"
import type { UsageAttribution } from "../domain/Usage.ts"
import type { RetrySettings } from "./retryBackoff.ts"

/** What every claimed job has, whatever its kind: enough for the worker to hold it. */
export interface HeldJob {
  readonly id: string
  readonly kind: JobKind
  readonly attempts: number
}

/** How a line retries a failed attempt: `retryDelayMs` backoff, until the job has had `maxAttempts`. */
export interface RetryPolicy extends RetrySettings {
  readonly maxAttempts: number
}

/**
 * Loops that take the jobs of some kinds (those of the handlers naming this line), each claim a
 * lease of `leaseMs`, failures retried by `retry`. A line is one object shared by its handlers: the
 * worker groups them by it, so its loops claim all of its kinds at once (one profile's jobs of a
 * line run in order).
 */
export interface JobLine<J extends HeldJob> {
  /** Names its loops and is the `line` of the jobs metric and the job span's `job.line`. */
  readonly name: string
  /** Loops per process; 0: this process runs none (the jobs wait for another replica). */
  readonly loops: number
  readonly leaseMs: number
  readonly retry: RetryPolicy
  /** Takes the next due job of these kinds (the line's), when one is due. */
  readonly claim: (workerId: string, kinds: ReadonlyArray<JobKind>) => Effect.Effect<Option.Option<J>>
  /** Milliseconds until `claim` may find a job of these kinds, when one waits. */
  readonly nextDueInMs: (kinds: ReadonlyArray<JobKind>) => Effect.Effect<Option.Option<number>>
  /** After a job's work committed (a profile's: this process's cached snapshot of it goes). */
  committed(job: J): Effect.Effect<void>
  /** What the loops run on, for the start log ("extraction model gpt-4o-mini"). */
  readonly runsOn?: string
  /** Whose memory work a job is: the provider calls its work makes are recorded for it (a profile's line). */
  workFor?(job: J): typeof UsageAttribution.Service
}

/** An attempt that failed and may go better later: retried with the line's backoff, up to its attempt limit. */
export class JobRetryable extends Schema.TaggedError<JobRetryable>()("JobRetryable", {
  message: Schema.String
}) {}

/** An attempt no retry would change (a revoked key): the job fails for good at once. */
export class JobPermanent extends Schema.TaggedError<JobPermanent>()("JobPermanent", {
  message: Schema.String
}) {}

export type JobError = JobRetryable | JobPermanent

export const retryable = (error: { readonly message: string }) => new JobRetryable({ message: error.message })
export const permanent = (error: { readonly message: string }) => new JobPermanent({ message: error.message })

/**
 * A job's work once prepared: `apply` runs in the transaction that completes the job (its lease
 * checked there: a worker that lost it commits nothing) and gives the job's result.
 */
export interface JobWork {
  readonly apply: Effect.Effect<unknown>
}

/**
 * What runs the jobs of one kind: its line (how its jobs are claimed, leased and retried) and
 * `run`, the work before the transaction (a model call, a delivery), failing with a `JobError`
 * that says whether another attempt may go.
 */
export interface JobHandler<J extends HeldJob> {
  readonly kind: JobKind
  readonly line: JobLine<J>
  run(job: J): Effect.Effect<JobWork, JobError>
  /** After the job failed for good: lets go of what was kept for it (a turn's images and files). */
  failed?(job: J): Effect.Effect<void>
}

/**
 * Any kind's handler, as the registry keeps it. `run` and `committed` are methods so that a
 * handler of a line's own job type fits here: the registry hands each handler only jobs its own
 * line claimed, which have that type.
 */
export type AnyJobHandler = JobHandler<HeldJob>
