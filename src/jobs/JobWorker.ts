import { randomUUID } from "node:crypto"
import { hostname } from "node:os"
import { PgClient } from "@effect/sql-pg"
import { Cause, Context, Effect, Exit, Fiber, Latch, Layer, Metric, Option, Queue, Random, Ref } from "effect"
import type { SqlError } from "effect/sql"
import { forkListener } from "../db/forkListener.ts"
import { exportedIfWorked } from "../observability/idleSpans.ts"
import { backgroundJobs, labelled } from "../observability/metrics.ts"
import type { JobError } from "./JobHandler.ts"
import { JobQueue, LeaseLost } from "./JobQueue.ts"
import { type ClaimedWork, JobRegistry, type RunnableLine } from "./JobRegistry.ts"
import { JobSettings } from "./JobSettings.ts"
import { retryDelayMs } from "./retryBackoff.ts"

export interface WorkerStats {
  /** `false` when this process runs no worker loops (no extraction key, or `EXTRACTION_CONCURRENCY=0`). */
  readonly running: boolean
  readonly loops: number
  /** Turns of the loops that found no job to claim (and waited). */
  readonly idlePolls: number
  readonly claimed: number
  readonly succeeded: number
  readonly retried: number
  readonly failed: number
  readonly released: number
  /** Jobs this process stopped because another worker had taken them over (their writes rolled back). */
  readonly leaseLost: number
  readonly inFlight: number
}

const CHANNEL = "extraction_jobs"

type JobFailure = JobError | LeaseLost | SqlError.SqlError

const outcomeOf = labelled(backgroundJobs)

/** Shortest pause after finding nothing claimable, so a job that is due but locked cannot cause a spin. */
const MIN_IDLE_MS = 50

/**
 * Loops that take jobs from the queue and run them, line by line (`JobRegistry`: each line's
 * handlers say how many loops, how they claim, the lease and the retries). They wake on
 * `LISTEN extraction_jobs` (a trigger notifies on every insert, naming the kinds; only the loops
 * of a line that takes one of them wake) and poll slowly as a safety net. A failed job is retried
 * with the line's exponential backoff up to its attempt limit, then marked failed with its last
 * error; a handler's `JobPermanent` fails it at once. On shutdown the loops stop claiming, running
 * jobs get a grace period to finish, and whatever is still running after it is put back in the queue.
 */
export class JobWorker extends Context.Service<
  JobWorker,
  {
    readonly stats: Effect.Effect<WorkerStats>
  }
>()("gateway/jobs/JobWorker") {
  static readonly layer = Layer.effect(
    JobWorker,
    Effect.gen(function* () {
      const config = yield* JobSettings
      const queue = yield* JobQueue
      const { lines } = yield* JobRegistry
      const sql = yield* PgClient.PgClient
      const stats = yield* Ref.make<WorkerStats>({
        running: false,
        loops: 0,
        idlePolls: 0,
        claimed: 0,
        succeeded: 0,
        retried: 0,
        failed: 0,
        released: 0,
        leaseLost: 0,
        inFlight: 0
      })
      const count = (update: (s: WorkerStats) => Partial<WorkerStats>) =>
        Ref.update(stats, (s) => ({ ...s, ...update(s) }))
      const service = JobWorker.of({ stats: Ref.get(stats) })

      /** The handler's work, then its writes and the completion in one transaction, which checks the lease. */
      const perform = (workerId: string, job: ClaimedWork): Effect.Effect<void, JobFailure> =>
        job.run.pipe(
          Effect.flatMap(({ apply }) =>
            sql.withTransaction(apply.pipe(Effect.flatMap((result) => queue.complete(job.id, workerId, result))))
          ),
          Effect.andThen(job.committed)
        )

      if (lines.every((line) => line.loops === 0)) return service

      const processId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
      // One latch per line: a notification wakes only the loops that take the kinds it names.
      const wakes = new Map(
        yield* Effect.forEach(lines, (line) => Effect.map(Latch.make(false), (latch) => [line.name, latch] as const))
      )
      const wakeFor = (payload: string) => {
        const kinds = payload.split(",")
        return Effect.forEach(
          lines.filter((line) => payload === "" || line.kinds.some((kind) => kinds.includes(kind))),
          (line) => wakes.get(line.name)!.release,
          { discard: true }
        )
      }
      const wakeAll = Effect.forEach(wakes.values(), (latch) => latch.release, { discard: true })
      const stopping = yield* Ref.make(false)

      /**
       * Renews the lease while the job runs (a slow model call keeps it); fails with `LeaseLost` once
       * another worker holds the job, which stops the work. A renewal the database does not answer
       * says nothing about the lease: the next beat tries again.
       */
      const keepLease = (workerId: string, job: ClaimedWork, leaseMs: number) =>
        queue.heartbeat(job.id, workerId, leaseMs).pipe(
          Effect.catchDefect(() => Effect.succeed(true)),
          Effect.flatMap((held) => (held ? Effect.void : Effect.fail(new LeaseLost({ jobId: job.id })))),
          Effect.delay(Math.max(100, Math.floor(leaseMs / 3))),
          Effect.forever
        )

      const run = (workerId: string, line: RunnableLine, job: ClaimedWork) =>
        Effect.gen(function* () {
          yield* count((s) => ({ claimed: s.claimed + 1, inFlight: s.inFlight + 1 }))
          const exit = yield* Effect.raceFirst(perform(workerId, job), keepLease(workerId, job, line.leaseMs)).pipe(
            Effect.exit
          )
          yield* count((s) => ({ inFlight: s.inFlight - 1 }))
          if (Exit.isSuccess(exit)) {
            yield* Metric.update(outcomeOf({ line: line.name, outcome: "succeeded" }), 1)
            return yield* count((s) => ({ succeeded: s.succeeded + 1 }))
          }

          const failure = Cause.findErrorOption(exit.cause)
          if (Option.isSome(failure) && failure.value._tag === "LeaseLost") {
            // Another worker runs the job now; nothing of this attempt was committed.
            yield* Effect.logWarning(
              `${job.kind} job ${job.id}: lease lost to another worker; this attempt's writes were rolled back`
            )
            yield* Metric.update(outcomeOf({ line: line.name, outcome: "lease_lost" }), 1)
            return yield* count((s) => ({ leaseLost: s.leaseLost + 1 }))
          }
          const message = Option.match(failure, {
            onNone: () => "internal error (see the service log)",
            onSome: (error) => error.message
          })
          if (Option.isNone(failure)) yield* Effect.logError(`${job.kind} job ${job.id} failed`, exit.cause)
          // The handler knows when no attempt would go otherwise (a revoked key stays revoked).
          const final = Option.isSome(failure) && failure.value._tag === "JobPermanent"
          if (final || job.attempts >= line.retry.maxAttempts) {
            yield* Effect.logWarning(
              `${job.kind} job ${job.id} failed for good after ${job.attempts} attempt(s): ${message}`
            )
            yield* queue.fail(job.id, workerId, message)
            yield* job.failed.pipe(
              Effect.catchCause((cause) => Effect.logError(`${job.kind} job ${job.id}: cleanup after failing`, cause))
            )
            yield* Metric.update(outcomeOf({ line: line.name, outcome: "failed" }), 1)
            return yield* count((s) => ({ failed: s.failed + 1 }))
          }
          // The wait itself is kept by the database (run_after), on the clock every replica shares.
          yield* queue.retry(job.id, workerId, message, retryDelayMs(job.attempts, line.retry, yield* Random.next))
          yield* Metric.update(outcomeOf({ line: line.name, outcome: "retried" }), 1)
          yield* count((s) => ({ retried: s.retried + 1 }))
        }).pipe(
          // Cut short by shutdown: hand the job back rather than leave it to its lease.
          Effect.onInterrupt(() =>
            queue
              .release(job.id, workerId)
              .pipe(Effect.andThen(count((s) => ({ released: s.released + 1, inFlight: s.inFlight - 1 }))))
          ),
          Effect.annotateLogs({ jobId: job.id, kind: job.kind })
        )

      const idle = (line: RunnableLine) =>
        Effect.gen(function* () {
          const due = yield* line.nextDueInMs
          const waitMs = Math.max(
            MIN_IDLE_MS,
            Option.match(due, { onNone: () => config.pollMs, onSome: (ms) => Math.min(ms, config.pollMs) })
          )
          yield* wakes.get(line.name)!.await.pipe(Effect.timeoutOption(waitMs))
        })

      /**
       * One turn of a loop: a job claimed and run, in one trace (its span, the claim, the work), or
       * none due and a wait. Only a turn that found a job exports its spans: an idle gateway's polls
       * leave none.
       */
      const turn = (workerId: string, line: RunnableLine) =>
        exportedIfWorked(
          (worked: boolean) => worked,
          (keep) =>
            Effect.gen(function* () {
              const claimed = yield* line.claim(workerId)
              if (Option.isNone(claimed)) {
                yield* count((s) => ({ idlePolls: s.idlePolls + 1 }))
                yield* idle(line)
                return false
              }
              const job = claimed.value
              yield* keep
              yield* Effect.annotateCurrentSpan({ "job.id": job.id, "job.kind": job.kind, "job.attempt": job.attempts })
              yield* run(workerId, line, job)
              return true
              // The span keeps the name it had before the worker ran every kind: traces are found by it.
            }).pipe(Effect.withSpan("ExtractionWorker.job", { attributes: { "job.line": line.name } }))
        )

      const loop = (workerId: string, line: RunnableLine) =>
        Effect.gen(function* () {
          while (!(yield* Ref.get(stopping))) yield* turn(workerId, line)
        }).pipe(
          // A database hiccup must not end the loop: log, pause, go on.
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.failCause(cause)
              : Effect.logError("background worker loop failed; restarting", cause).pipe(
                  Effect.andThen(Effect.sleep("1 second"))
                )
          ),
          Effect.repeat({ while: () => Ref.get(stopping).pipe(Effect.map((stop) => !stop)) })
        )

      const listen = Effect.scoped(
        Effect.gen(function* () {
          const notifications = yield* sql.listen(CHANNEL)
          yield* wakeAll // jobs may have arrived before the listener
          yield* Queue.take(notifications).pipe(
            Effect.flatMap((notification) => wakeFor(notification.payload)),
            Effect.forever
          )
        })
      ).pipe(
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause)
            ? Effect.failCause(cause)
            : Effect.logWarning("extraction LISTEN lost; polling until it is back", cause).pipe(
                Effect.andThen(Effect.sleep("2 seconds"))
              )
        ),
        Effect.forever
      )

      yield* forkListener(listen)
      const loops = yield* Effect.forEach(
        lines.flatMap((line) =>
          Array.from({ length: line.loops }, (_, i) => ({ workerId: `${processId}/${line.name}-${i}`, line }))
        ),
        ({ line, workerId }) => Effect.forkScoped(loop(workerId, line))
      )
      yield* count(() => ({ running: true, loops: loops.length }))
      yield* Effect.logInfo(
        `background worker: ${lines.map((line) => `${line.loops} ${line.name} loop(s)`).join(", ")}` +
          lines.map((line) => (line.runsOn === undefined ? "" : `, ${line.runsOn}`)).join("")
      )

      // Registered after the forks, so it runs before the scope interrupts them.
      yield* Effect.addFinalizer(() =>
        Effect.gen(function* () {
          yield* Ref.set(stopping, true)
          yield* Effect.forEach(wakes.values(), (latch) => latch.open, { discard: true })
          const drained = yield* Fiber.joinAll(loops).pipe(Effect.timeoutOption(config.shutdownGraceMs))
          if (Option.isNone(drained))
            yield* Effect.logWarning("extraction jobs still running after the grace period go back to the queue")
          yield* count(() => ({ running: false }))
        })
      )
      return service
    })
  ).pipe(Layer.provide([JobQueue.layer]))
}
