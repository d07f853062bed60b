import { randomBytes } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Effect, Layer, Option, Schema } from "effect"
import { ProfileId } from "../../src/domain/Profile.ts"
import { JobQueue } from "../../src/jobs/JobQueue.ts"
import * as TestDatabase from "../support/database.ts"

/**
 * Leases and retry delays of the job queue. They are kept on the database's clock (`now()`, the one
 * every replica shares; see `JobQueue`), so these tests do not wait for time to pass: they pass
 * lengths that have already run out, or that cannot run out while the test runs.
 */

/** The queue over a fresh, migrated database of its own. */
const QueueOnFreshDatabase = JobQueue.layerTest.pipe(Layer.provideMerge(TestDatabase.layer))

/** A lease that ended a second ago: what a worker that died mid-job leaves behind. */
const LAPSED = -1000
/** A lease no test outlives. */
const HELD = 3_600_000

const KINDS = ["ingest"] as const

/** A profile with one queued ingest job. */
const queuedJob = Effect.gen(function* () {
  const sql = yield* PgClient.PgClient
  const rows = yield* sql<{
    id: string
  }>`INSERT INTO profiles (external_id) VALUES (${`p-${randomBytes(4).toString("hex")}`}) RETURNING id`
  const profileId = Schema.decodeUnknownSync(ProfileId)(rows[0]!.id)
  return yield* (yield* JobQueue).enqueueIngest(profileId, "a document", null)
}).pipe(Effect.orDie)

const jobOf = (id: string) => JobQueue.use((queue) => queue.get(id)).pipe(Effect.orDie)

describe("a job's lease", () => {
  it.effect("keeps the job from every other worker while it holds", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const job = yield* queuedJob
      const claimed = yield* queue.claim("worker-a", HELD, KINDS)
      assert.strictEqual(Option.getOrThrow(claimed).id, job.id)
      assert.isTrue(Option.isNone(yield* queue.claim("worker-b", HELD, KINDS)))
      // The workers' idle wait ends when the lease would.
      const due = Option.getOrThrow(yield* queue.nextDueInMs(KINDS))
      assert.isTrue(due > 0 && due <= HELD, `next due in ${due} ms`)
    }).pipe(Effect.provide(QueueOnFreshDatabase))
  )

  it.effect(
    "once run out, lets another worker take the job over; the first can then neither finish nor extend it",
    () =>
      Effect.gen(function* () {
        const queue = yield* JobQueue
        const job = yield* queuedJob
        yield* queue.claim("vanished", LAPSED, KINDS)
        const takenOver = Option.getOrThrow(yield* queue.claim("rescuer", HELD, KINDS))
        assert.strictEqual(takenOver.id, job.id)
        assert.strictEqual(takenOver.attempts, 2)

        // The first worker comes back: its writes no longer apply, and it is told so.
        assert.isFalse(yield* queue.heartbeat(job.id, "vanished", HELD))
        const refused = yield* Effect.flip(queue.complete(job.id, "vanished", { by: "vanished" }))
        assert.strictEqual(refused._tag, "LeaseLost")
        yield* queue.fail(job.id, "vanished", "too late")
        assert.deepInclude(yield* jobOf(job.id), { status: "running", lastError: null })

        yield* queue.complete(job.id, "rescuer", { by: "rescuer" })
        assert.deepInclude(yield* jobOf(job.id), { status: "succeeded", result: { by: "rescuer" }, attempts: 2 })
      }).pipe(Effect.provide(QueueOnFreshDatabase))
  )

  it.effect("is extended by a heartbeat, so a long job is not taken over", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const job = yield* queuedJob
      yield* queue.claim("slow", LAPSED, KINDS)
      yield* queue.heartbeat(job.id, "slow", HELD)
      assert.isTrue(Option.isNone(yield* queue.claim("eager", HELD, KINDS)))
      assert.deepInclude(yield* jobOf(job.id), { status: "running", attempts: 1 })
    }).pipe(Effect.provide(QueueOnFreshDatabase))
  )

  it.effect("given back at shutdown, leaves the job pending as if never attempted", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const job = yield* queuedJob
      yield* queue.claim("stopping", HELD, KINDS)
      yield* queue.release(job.id, "stopping")
      assert.deepInclude(yield* jobOf(job.id), { status: "pending", attempts: 0 })
      assert.strictEqual(Option.getOrThrow(yield* queue.claim("next", HELD, KINDS)).attempts, 1)
    }).pipe(Effect.provide(QueueOnFreshDatabase))
  )
})

describe("a retried job", () => {
  it.effect("waits out its delay, measured from the failure, and keeps the error meanwhile", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const job = yield* queuedJob
      yield* queue.claim("w", HELD, KINDS)
      yield* queue.retry(job.id, "w", "model overloaded", 90_000)
      const waiting = yield* jobOf(job.id)
      assert.deepInclude(waiting, { status: "pending", attempts: 1, lastError: "model overloaded" })
      // Both written by the same statement, from the same now().
      assert.strictEqual(DateTime.toEpochMillis(waiting.runAfter) - DateTime.toEpochMillis(waiting.updatedAt), 90_000)
      assert.isTrue(Option.isNone(yield* queue.claim("w", HELD, KINDS)))
      const due = Option.getOrThrow(yield* queue.nextDueInMs(KINDS))
      assert.isTrue(due > 0 && due <= 90_000, `next due in ${due} ms`)
    }).pipe(Effect.provide(QueueOnFreshDatabase))
  )

  it.effect("with no delay, is taken again at once, its attempts counted", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const job = yield* queuedJob
      yield* queue.claim("w", HELD, KINDS)
      yield* queue.retry(job.id, "w", "blip", 0)
      const again = Option.getOrThrow(yield* queue.claim("w", HELD, KINDS))
      assert.strictEqual(again.attempts, 2)
      assert.strictEqual(again.lastError, "blip")
    }).pipe(Effect.provide(QueueOnFreshDatabase))
  )

  it.effect("that failed for good is never taken again", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const job = yield* queuedJob
      yield* queue.claim("w", HELD, KINDS)
      yield* queue.fail(job.id, "w", "model is down")
      assert.deepInclude(yield* jobOf(job.id), { status: "failed", lastError: "model is down" })
      assert.isTrue(Option.isNone(yield* queue.claim("w", HELD, KINDS)))
      assert.isTrue(Option.isNone(yield* queue.nextDueInMs(KINDS)))
    }).pipe(Effect.provide(QueueOnFreshDatabase))
  )
})
