import { randomUUID } from "node:crypto"
import { hostname } from "node:os"
import { PgClient } from "@effect/sql-pg"
import { Cause, Context, Effect, Exit, Fiber, Latch, Layer, Metric, Option, Queue, Random, Ref } from "effect"
import type { SqlError } from "effect/sql"
import { forkListener } from "../db/forkListener.ts"
import type { JobKind } from "../domain/Job.ts"
import { Embedder, type EmbeddingFailed } from "../embedding/Embedder.ts"
import { MemoryEmbedding } from "../embedding/MemoryEmbedding.ts"
import { type ClaimedJob, JobQueue, LeaseLost } from "../jobs/JobQueue.ts"
import { exportedIfWorked } from "../observability/idleSpans.ts"
import { backgroundJobs, labelled } from "../observability/metrics.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { ThreadSummarizer } from "../threads/ThreadSummarizer.ts"
import type { DeliveryFailed } from "../webhooks/WebhookErrors.ts"
import { WebhookSender } from "../webhooks/WebhookSender.ts"
import { WebhooksConfig } from "../webhooks/WebhooksConfig.ts"
import { CueWriter } from "./CueWriter.ts"
import { ExtractionConfig } from "./ExtractionConfig.ts"
import type { ExtractionKeyRevoked } from "./ExtractionCredentials.ts"
import { type ExtractionCallFailed, ExtractionModel } from "./ExtractionModel.ts"
import { Extractor } from "./Extractor.ts"
import { type RetrySettings, retryDelayMs } from "./retryBackoff.ts"

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

type JobFailure =
  | EmbeddingFailed
  | ExtractionCallFailed
  | ExtractionKeyRevoked
  | DeliveryFailed
  | LeaseLost
  | SqlError.SqlError

/** A job a loop holds, with its work: what commits it (or fails) and nothing else. */
interface HeldJob {
  readonly id: string
  readonly kind: JobKind
  readonly attempts: number
  readonly perform: Effect.Effect<void, JobFailure>
}

/** Loops that take jobs of some kinds, each claim a lease of `leaseMs`, failures retried by `retries`. */
interface Line {
  readonly name: string
  readonly kinds: ReadonlyArray<JobKind>
  readonly loops: number
  readonly leaseMs: number
  readonly retries: RetrySettings & { readonly maxAttempts: number }
  readonly claim: (workerId: string) => Effect.Effect<Option.Option<HeldJob>>
  /** Milliseconds until `claim` may find a job, when one waits. */
  readonly nextDueInMs: Effect.Effect<Option.Option<number>>
}

const outcomeOf = labelled(backgroundJobs)

/** Shortest pause after finding nothing claimable, so a job that is due but locked cannot cause a spin. */
const MIN_IDLE_MS = 50

/**
 * Loops that take jobs from the queue and run them: extraction loops (`EXTRACTION_CONCURRENCY`,
 * when the extraction model has a key) take turn, ingest, summary, cues and thread jobs; embedding loops
 * (`EMBEDDING_CONCURRENCY`, when embeddings are on) take embed jobs; delivery loops
 * (`WEBHOOK_CONCURRENCY`) take webhook deliveries, at most `WEBHOOK_MAX_IN_FLIGHT` of one webhook at
 * a time across replicas (so a receiver that never answers holds no more loops than that). They wake on
 * `LISTEN extraction_jobs` (a trigger notifies on every insert, naming the kinds; only the loops
 * that take one of them wake) and poll slowly as a safety net. A failed job is retried with
 * exponential backoff up to the attempt limit, then marked failed with its last error. A profile
 * that has used up its hourly extraction budget (`EXTRACTION_JOBS_PER_PROFILE_PER_HOUR`) waits: its
 * next job stays queued until the budget frees up. On shutdown the loops stop claiming, running jobs
 * get a grace period to finish, and whatever is still running after it is put back in the queue.
 */
export class ExtractionWorker extends Context.Service<
  ExtractionWorker,
  {
    readonly stats: Effect.Effect<WorkerStats>
  }
>()("gateway/extraction/ExtractionWorker") {
  static readonly layer = Layer.effect(
    ExtractionWorker,
    Effect.gen(function* () {
      const config = yield* ExtractionConfig
      const queue = yield* JobQueue
      const extractor = yield* Extractor
      const cueWriter = yield* CueWriter
      const threadSummarizer = yield* ThreadSummarizer
      const model = yield* ExtractionModel
      const sql = yield* PgClient.PgClient
      const cache = yield* SnapshotCache
      const embedder = yield* Embedder
      const embedding = yield* MemoryEmbedding
      const webhooks = yield* WebhooksConfig
      const sender = yield* WebhookSender
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
      const service = ExtractionWorker.of({ stats: Ref.get(stats) })

      /**
       * One job's work. Extraction and cues: the model call outside any transaction, then the writes
       * and the completion in one. Embedding: batches committed one by one (a job cut short resumes).
       */
      const perform = (
        workerId: string,
        job: ClaimedJob
      ): Effect.Effect<
        void,
        EmbeddingFailed | ExtractionCallFailed | ExtractionKeyRevoked | LeaseLost | SqlError.SqlError
      > => {
        if (job.kind === "embed")
          return embedding.run(job).pipe(Effect.flatMap((result) => queue.complete(job.id, workerId, result)))
        const plan: Effect.Effect<
          { readonly apply: Effect.Effect<unknown> },
          ExtractionCallFailed | ExtractionKeyRevoked
        > =
          job.kind === "cues"
            ? cueWriter.plan(job)
            : job.kind === "thread"
              ? threadSummarizer.plan(job)
              : extractor.plan(job)
        return plan.pipe(
          Effect.flatMap(({ apply }) =>
            // Completing checks the lease: a worker that lost it rolls its writes back.
            sql.withTransaction(apply.pipe(Effect.flatMap((result) => queue.complete(job.id, workerId, result))))
          )
        )
      }

      // Counted in the queue table, so the budget holds however many replicas run workers.
      const budget = { profileJobsPerHour: config.profileJobsPerHour }
      const profileLine = (name: string, kinds: ReadonlyArray<JobKind>, loops: number): Line => ({
        name,
        kinds,
        loops,
        leaseMs: config.leaseMs,
        retries: config,
        nextDueInMs: queue.nextDueInMs(kinds),
        claim: (workerId) =>
          queue.claim(workerId, config.leaseMs, kinds, budget).pipe(
            Effect.map(
              Option.map((job) => ({
                id: job.id,
                kind: job.kind,
                attempts: job.attempts,
                // Committed: this process's cached snapshot goes at once (others hear the notification).
                perform: perform(workerId, job).pipe(Effect.tap(() => cache.invalidate(job.profileId)))
              }))
            )
          )
      })
      // Extraction needs the model's key; embedding needs embeddings on. Each has its own loops.
      const lines: ReadonlyArray<Line> = [
        profileLine(
          "extract",
          ["turn", "ingest", "summary", "cues", "thread"],
          model.available ? config.concurrency : 0
        ),
        profileLine("embed", ["embed"], embedder.model === undefined ? 0 : embedder.settings.concurrency),
        {
          name: "webhook",
          kinds: ["webhook"],
          loops: webhooks.concurrency,
          leaseMs: webhooks.leaseMs,
          retries: webhooks,
          nextDueInMs: queue.nextDeliveryDueInMs(webhooks.maxInFlight),
          claim: (workerId) =>
            queue.claimDelivery(workerId, webhooks.leaseMs, webhooks.maxInFlight).pipe(
              Effect.map(
                Option.map((delivery) => ({
                  id: delivery.id,
                  kind: delivery.kind,
                  attempts: delivery.attempts,
                  perform: sender
                    .deliver(delivery)
                    .pipe(Effect.flatMap((result) => queue.complete(delivery.id, workerId, result)))
                }))
              )
            )
        }
      ]
      if (!model.available || config.concurrency === 0) {
        yield* Effect.logWarning(
          config.concurrency === 0
            ? "extraction worker off (EXTRACTION_CONCURRENCY=0): jobs stay queued for other replicas"
            : "extraction worker off: no EXTRACTION_API_KEY or UPSTREAM_API_KEY; jobs stay queued until one is set"
        )
      }
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
      const keepLease = (workerId: string, job: HeldJob, leaseMs: number) =>
        queue.heartbeat(job.id, workerId, leaseMs).pipe(
          Effect.catchDefect(() => Effect.succeed(true)),
          Effect.flatMap((held) => (held ? Effect.void : Effect.fail(new LeaseLost({ jobId: job.id })))),
          Effect.delay(Math.max(100, Math.floor(leaseMs / 3))),
          Effect.forever
        )

      const run = (workerId: string, line: Line, job: HeldJob) =>
        Effect.gen(function* () {
          yield* count((s) => ({ claimed: s.claimed + 1, inFlight: s.inFlight + 1 }))
          const exit = yield* Effect.raceFirst(job.perform, keepLease(workerId, job, line.leaseMs)).pipe(Effect.exit)
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
          // A revoked key stays revoked: no attempt would go otherwise.
          const final = Option.isSome(failure) && failure.value._tag === "ExtractionKeyRevoked"
          if (final || job.attempts >= line.retries.maxAttempts) {
            yield* Effect.logWarning(
              `${job.kind} job ${job.id} failed for good after ${job.attempts} attempt(s): ${message}`
            )
            yield* queue.fail(job.id, workerId, message)
            yield* Metric.update(outcomeOf({ line: line.name, outcome: "failed" }), 1)
            return yield* count((s) => ({ failed: s.failed + 1 }))
          }
          // The wait itself is kept by the database (run_after), on the clock every replica shares.
          yield* queue.retry(job.id, workerId, message, retryDelayMs(job.attempts, line.retries, yield* Random.next))
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

      const idle = (line: Line) =>
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
      const turn = (workerId: string, line: Line) =>
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
            }).pipe(Effect.withSpan("ExtractionWorker.job", { attributes: { "job.line": line.name } }))
        )

      const loop = (workerId: string, line: Line) =>
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
          (model.available ? `, extraction model ${config.model}` : "") +
          (embedder.model === undefined ? "" : `, embedding model ${embedder.model}`)
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
  )
}
