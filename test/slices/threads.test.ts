import { randomBytes } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { ProfileId } from "../../src/domain/Profile.ts"
import { ThreadStore } from "../../src/threads/ThreadStore.ts"
import * as TestDatabase from "../support/database.ts"

const StoreOnFreshDatabase = ThreadStore.layer.pipe(Layer.provideMerge(TestDatabase.layer))

const newProfile = Effect.gen(function* () {
  const sql = yield* PgClient.PgClient
  const rows = yield* sql<{
    id: string
  }>`INSERT INTO profiles (external_id) VALUES (${`t-${randomBytes(4).toString("hex")}`}) RETURNING id`
  return Schema.decodeUnknownSync(ProfileId)(rows[0]!.id)
}).pipe(Effect.orDie)

describe("a thread's summary job", () => {
  it.effect("is queued once however many requests of the thread ask for it together, up to the latest cut", () =>
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const threads = yield* ThreadStore
      const profileId = yield* newProfile
      const start = Date.parse("2026-11-01T00:00:00Z")
      // Every connection of the pool open, so the requests below do run at once.
      yield* Effect.forEach(Array.from({ length: 8 }), () => sql`SELECT pg_sleep(0.05)`, { concurrency: "unbounded" })
      yield* Effect.forEach(
        Array.from({ length: 64 }, (_, index) => start + index * 1000),
        (until) => threads.queueSummary(profileId, "chat-1", until),
        { concurrency: "unbounded" }
      )
      const pending = yield* sql<{ until: string }>`
        SELECT input->>'until' AS until FROM extraction_jobs
        WHERE profile_id = ${profileId} AND kind = 'thread' AND status = 'pending'`.pipe(Effect.orDie)
      assert.strictEqual(pending.length, 1)
      assert.strictEqual(Date.parse(pending[0]!.until), start + 63_000)
    }).pipe(Effect.provide(StoreOnFreshDatabase))
  )
})
