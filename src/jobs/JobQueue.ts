import { Context, DateTime, Effect, Layer, Metric, Option, Schedule, Schema } from "effect"
import { JobNotFailed, JobNotFound } from "../domain/errors.ts"
import { hasFinished, type Job, type JobKind, type JobStatus } from "../domain/Job.ts"
import { DEFAULT_NAMESPACE, inNamespace } from "../domain/Namespace.ts"
import type { ProfileId } from "../domain/Profile.ts"
import { isUuid } from "../domain/Uuid.ts"
import { KeepTurnSpans } from "../observability/idleSpans.ts"
import { extractionJobsDeferred } from "../observability/metrics.ts"
import { type ClaimedDelivery, type ClaimedJob, JobsRepo } from "./JobsRepo.ts"

export { ClaimedDelivery, ClaimedJob } from "./JobsRepo.ts"

/** How often `await` looks at the job. */
const WAIT_POLL = "100 millis"

export interface QueueOverview {
  readonly counts: Readonly<Record<JobStatus, number>>
  /** Age of the oldest pending job in seconds: how far behind the workers are. */
  readonly oldestPendingSeconds: number | null
  readonly jobs: ReadonlyArray<Job>
}

/** The unfinished work: what metrics report, cheap enough to read on every scrape. */
export interface QueueBacklog {
  readonly pending: number
  readonly running: number
  /** Age of the oldest pending job in seconds (0 when none is pending). */
  readonly oldestPendingSeconds: number
}

/** The worker no longer holds the job: its lease ran out and another worker took it over. */
export class LeaseLost extends Schema.TaggedError<LeaseLost>()("LeaseLost", {
  jobId: Schema.String
}) {
  override get message() {
    return `the lease on job ${this.jobId} was taken over`
  }
}

export interface ClaimOptions {
  /**
   * Extraction jobs (turn, ingest, summary, cues: the ones that call the extraction model) one profile
   * may start per hour, counted over the jobs workers took in the last hour (0: no limit).
   */
  readonly profileJobsPerHour?: number
}

/**
 * The durable extraction queue in PostgreSQL. Many workers (in many processes)
 * share it: a claim takes a due job with `FOR UPDATE SKIP LOCKED`, only ever the oldest unfinished
 * job of its profile, so one profile's jobs run one at a time and in order. A claim is a lease: a
 * worker that dies loses it after `leaseMs` and the job is claimed again. A profile past its hourly
 * extraction budget has its next job put back with `run_after` at the moment the budget frees up:
 * it stays queued (visible in `/api/jobs`), never dropped, and no worker polls for it meanwhile.
 * Every time here (leases, retry delays, the budget's hour) is the database's `now()`, not Effect's
 * `Clock`: it is the one clock all replicas share, and a replica whose own clock ran ahead would
 * take over jobs whose leases still hold. Tests vary the lengths passed in instead of the clock.
 */
export class JobQueue extends Context.Service<
  JobQueue,
  {
    readonly enqueueIngest: (profileId: ProfileId, data: string, source: string | null) => Effect.Effect<Job>
    /** Takes the next due job of one of these kinds, when one is due (deferring those over their profile's budget). */
    readonly claim: (
      workerId: string,
      leaseMs: number,
      kinds: ReadonlyArray<JobKind>,
      options?: ClaimOptions
    ) => Effect.Effect<Option.Option<ClaimedJob>>
    /**
     * Takes the next due webhook delivery, one webhook's deliveries about one profile in order, and
     * never one of a webhook that already has `maxInFlight` in flight (across replicas): a webhook
     * with nothing in flight goes first, so a receiver that never answers holds `maxInFlight`
     * delivery loops, not all of them.
     */
    readonly claimDelivery: (
      workerId: string,
      leaseMs: number,
      maxInFlight: number
    ) => Effect.Effect<Option.Option<ClaimedDelivery>>
    /** Extends the worker's lease; false once it no longer holds the job. */
    readonly heartbeat: (jobId: string, workerId: string, leaseMs: number) => Effect.Effect<boolean>
    /**
     * Marks the job done. Fails with `LeaseLost` when the worker no longer holds it, so that, run in
     * the transaction that applies the job's effects, a worker whose lease was taken over commits nothing.
     */
    readonly complete: (jobId: string, workerId: string, result: unknown) => Effect.Effect<void, LeaseLost>
    readonly retry: (jobId: string, workerId: string, error: string, delayMs: number) => Effect.Effect<void>
    readonly fail: (jobId: string, workerId: string, error: string) => Effect.Effect<void>
    /** Gives a job back untouched (shutdown): it is pending again and the attempt does not count. */
    readonly release: (jobId: string, workerId: string) => Effect.Effect<void>
    /** Milliseconds until some job of these kinds may become claimable, when one is waiting. */
    readonly nextDueInMs: (kinds: ReadonlyArray<JobKind>) => Effect.Effect<Option.Option<number>>
    /** The same for deliveries that `claimDelivery` with this `maxInFlight` may take. */
    readonly nextDeliveryDueInMs: (maxInFlight: number) => Effect.Effect<Option.Option<number>>
    readonly get: (jobId: string) => Effect.Effect<Job, JobNotFound>
    /**
     * The job once it has finished, or as it is when `timeoutMs` runs out (an ingest's `?wait=true`). A
     * job gone meanwhile (its profile deleted) is `JobNotFound`.
     */
    readonly await: (jobId: string, timeoutMs: number) => Effect.Effect<Job, JobNotFound>
    /** An operator's retry of a failed job: back in the queue with its attempts anew. */
    readonly requeueFailed: (jobId: string) => Effect.Effect<Job, JobNotFound | JobNotFailed>
    readonly backlog: Effect.Effect<QueueBacklog>
    readonly overview: (options: {
      readonly status: JobStatus | undefined
      readonly limit: number
    }) => Effect.Effect<QueueOverview>
  }
>()("gateway/jobs/JobQueue") {
  static readonly layer = Layer.effect(
    JobQueue,
    Effect.gen(function* () {
      const repo = yield* JobsRepo

      const claim = Effect.fn("JobQueue.claim")(function* (
        workerId: string,
        leaseMs: number,
        kinds: ReadonlyArray<JobKind>,
        options?: ClaimOptions
      ) {
        const perHour = options?.profileJobsPerHour ?? 0
        // Each deferral moves a job's run_after past now, so this ends once a job is claimed or none is due.
        while (true) {
          const attempt = yield* repo.claimOnce(workerId, leaseMs, kinds, perHour)
          if (Option.isNone(attempt)) return Option.none<ClaimedJob>()
          if (attempt.value._tag === "Claimed") return Option.some(attempt.value.job)
          yield* Metric.update(extractionJobsDeferred, 1)
          // A deferral is work done: its trace (which the log line below names) is exported.
          yield* Effect.flatten(KeepTurnSpans)
          // Once per job and hour at most: learning that stalls for an hour says so where operators look.
          yield* Effect.logInfo(
            `extraction job deferred until ${DateTime.formatIso(attempt.value.runAfter)}: its profile started ` +
              `${perHour} jobs in the last hour (EXTRACTION_JOBS_PER_PROFILE_PER_HOUR)`,
            { jobId: attempt.value.jobId, profileId: attempt.value.profileId }
          )
        }
      })

      const claimDelivery = Effect.fnUntraced(function* (workerId: string, leaseMs: number, maxInFlight: number) {
        // A claim that lost a race (below) tries once more, then leaves it to the loop's next turn.
        for (let tries = 0; tries < 2; tries++) {
          const idle = yield* repo.claimDelivery(workerId, leaseMs, 1)
          const claimed =
            Option.isNone(idle) && maxInFlight > 1 ? yield* repo.claimDelivery(workerId, leaseMs, maxInFlight) : idle
          if (Option.isNone(claimed)) return claimed
          // The claim counted the deliveries in flight as they were when it began: another loop's or
          // replica's claim for the same webhook committed since was not among them. Counted again
          // after ours committed, the later of two racing claims sees the other and gives its delivery back.
          const others = yield* repo.deliveriesInFlight(claimed.value.webhookId, claimed.value.id)
          if (others < maxInFlight) return claimed
          yield* repo.putBack(claimed.value.id, workerId)
        }
        return Option.none<ClaimedDelivery>()
      })

      const overview = Effect.fn("JobQueue.overview")(function* (options: {
        readonly status: JobStatus | undefined
        readonly limit: number
      }) {
        // Without a filter: the latest failures, the jobs an operator needs to look at.
        const [{ counts: rows, oldestPendingSeconds }, jobs] = yield* Effect.all(
          [repo.counts, repo.latest(options.status ?? "failed", options.limit)],
          { concurrency: 2 }
        )
        const counts: Record<JobStatus, number> = { pending: 0, running: 0, succeeded: 0, failed: 0 }
        for (const row of rows) {
          if (row.status in counts) counts[row.status as JobStatus] = row.count
        }
        return { counts, oldestPendingSeconds, jobs }
      })

      const requeueFailed = Effect.fn("JobQueue.requeueFailed")(function* (jobId: string) {
        if (!isUuid(jobId)) return yield* new JobNotFound({ jobId })
        const requeued = yield* repo.requeueFailed(jobId)
        if (Option.isSome(requeued)) return requeued.value
        const job = yield* repo.findById(jobId)
        if (Option.isNone(job)) return yield* new JobNotFound({ jobId })
        return yield* new JobNotFailed({ jobId, status: job.value.status })
      })

      const get = Effect.fn("JobQueue.get")(function* (jobId: string) {
        // Not a UUID: no such job (the database would refuse the cast).
        const job = isUuid(jobId) ? yield* repo.findById(jobId) : Option.none()
        if (Option.isNone(job)) return yield* new JobNotFound({ jobId })
        return job.value
      })

      const awaitJob = Effect.fn("JobQueue.await")(function* (jobId: string, timeoutMs: number) {
        const finished = yield* get(jobId).pipe(
          Effect.repeat({ schedule: Schedule.spaced(WAIT_POLL), until: hasFinished }),
          Effect.timeoutOption(timeoutMs)
        )
        return Option.isSome(finished) ? finished.value : yield* get(jobId)
      })

      return JobQueue.of({
        requeueFailed,
        enqueueIngest: Effect.fn("JobQueue.enqueueIngest")(repo.insertIngest),
        claim,
        claimDelivery: (workerId, leaseMs, maxInFlight) =>
          claimDelivery(workerId, leaseMs, maxInFlight).pipe(Effect.withSpan("JobQueue.claimDelivery")),
        heartbeat: Effect.fn("JobQueue.heartbeat")(repo.extendLease),
        complete: (jobId, workerId, result) =>
          Effect.flatMap(repo.markSucceeded(jobId, workerId, result), (held) =>
            held ? Effect.void : Effect.fail(new LeaseLost({ jobId }))
          ),
        retry: repo.markPending,
        fail: repo.markFailed,
        release: repo.putBack,
        nextDueInMs: repo.nextDueInMs,
        nextDeliveryDueInMs: repo.nextDeliveryDueInMs,
        get,
        await: awaitJob,
        backlog: repo.backlog.pipe(Effect.withSpan("JobQueue.backlog")),
        overview
      })
    })
  ).pipe(Layer.provide(JobsRepo.layer))

  /** The live queue with its repository: needs only the database (a test database in tests). */
  static readonly layerTest = JobQueue.layer.pipe(Layer.provideMerge(inNamespace(DEFAULT_NAMESPACE)))
}
