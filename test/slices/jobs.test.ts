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

/** A webhook of a namespace of its own, and `users` events queued for it, one about each user. */
const webhookWithEvents = (users: number) =>
  Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const namespace = `hooks-${randomBytes(4).toString("hex")}`
    const [webhook] = yield* sql<{ id: string }>`
      INSERT INTO webhooks (namespace, url, events, secret, secret_sealed)
      VALUES (${namespace}, 'https://hooks.example.com/', '{memory.created}', 'whsec_test', false) RETURNING id`
    yield* sql`
      SELECT queue_webhook_event(${namespace}, gen_random_uuid(), 'user-' || i, 'memory.created', '{}'::jsonb)
      FROM generate_series(1, ${users}) AS i`
    return webhook!.id
  }).pipe(Effect.orDie)

const runningOf = (webhookId: string) =>
  PgClient.PgClient.use(
    (sql) => sql<{ count: number }>`
      SELECT count(*)::int AS count FROM extraction_jobs WHERE webhook_id = ${webhookId} AND status = 'running'`
  ).pipe(
    Effect.orDie,
    Effect.map(([row]) => row!.count)
  )

describe("webhook deliveries", () => {
  it.effect("go one per webhook at a time: a second webhook's is taken while the first has one in flight", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const first = yield* webhookWithEvents(3)
      const second = yield* webhookWithEvents(3)
      const a = Option.getOrThrow(yield* queue.claimDelivery("a", HELD, 1))
      const b = Option.getOrThrow(yield* queue.claimDelivery("b", HELD, 1))
      assert.sameMembers([a.webhookId, b.webhookId], [first, second])
      // Both webhooks have one in flight: their other users' deliveries wait, and the loops with them.
      assert.isTrue(Option.isNone(yield* queue.claimDelivery("c", HELD, 1)))
      const due = Option.getOrThrow(yield* queue.nextDeliveryDueInMs(1))
      assert.isTrue(due > 0 && due <= HELD, `next due in ${due} ms`)

      yield* queue.complete(a.id, "a", {})
      assert.strictEqual(Option.getOrThrow(yield* queue.claimDelivery("a", HELD, 1)).webhookId, a.webhookId)
    }).pipe(Effect.provide(QueueOnFreshDatabase))
  )

  it.effect("above one in flight, take a busy webhook's only while no idle webhook has one due", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const busy = yield* webhookWithEvents(3)
      assert.strictEqual(Option.getOrThrow(yield* queue.claimDelivery("a", HELD, 2)).webhookId, busy)
      const idle = yield* webhookWithEvents(1)
      assert.strictEqual(Option.getOrThrow(yield* queue.claimDelivery("b", HELD, 2)).webhookId, idle)
      assert.strictEqual(Option.getOrThrow(yield* queue.claimDelivery("c", HELD, 2)).webhookId, busy)
      assert.isTrue(Option.isNone(yield* queue.claimDelivery("d", HELD, 2)))
      assert.strictEqual(yield* runningOf(busy), 2)
    }).pipe(Effect.provide(QueueOnFreshDatabase))
  )

  it.effect("of a replica that died hold their webhook only until their lease runs out", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const webhook = yield* webhookWithEvents(2)
      yield* queue.claimDelivery("vanished", LAPSED, 1)
      const next = Option.getOrThrow(yield* queue.claimDelivery("rescuer", HELD, 1))
      assert.strictEqual(next.webhookId, webhook)
      // The rescuer's delivery is now the one in flight; the lapsed one waits its turn.
      assert.isTrue(Option.isNone(yield* queue.claimDelivery("other", HELD, 1)))
    }).pipe(Effect.provide(QueueOnFreshDatabase))
  )

  it.effect("claimed at the same moment by many loops, still go one per webhook", () =>
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const webhook = yield* webhookWithEvents(12)
      // Every connection of the pool opened first, so that the claims' statements run side by side, each
      // reading the deliveries in flight before the others commit theirs.
      yield* Effect.all(
        Array.from({ length: 12 }, () => PgClient.PgClient.use((sql) => sql`SELECT pg_sleep(0.05)`)),
        { concurrency: "unbounded" }
      ).pipe(Effect.orDie)
      const claims = yield* Effect.all(
        Array.from({ length: 12 }, (_, i) => queue.claimDelivery(`loop-${i}`, HELD, 1)),
        { concurrency: "unbounded" }
      )
      const held = claims.filter(Option.isSome)
      assert.isAtMost(held.length, 1)
      assert.strictEqual(yield* runningOf(webhook), held.length)
      // Those that gave theirs back left them as they were: due, attempts not counted.
      const [{ attempts = -1 } = {}] = yield* PgClient.PgClient.use(
        (sql) => sql<{ attempts: number }>`
          SELECT max(attempts)::int AS attempts FROM extraction_jobs WHERE webhook_id = ${webhook} AND status = 'pending'`
      ).pipe(Effect.orDie)
      assert.strictEqual(attempts, 0)
    }).pipe(Effect.provide(QueueOnFreshDatabase))
  )
})
