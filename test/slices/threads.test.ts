import { PgClient } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { DateTime, Effect, Layer } from "effect"
import type { ProfileId } from "../../src/domain/Profile.ts"
import { ThreadsRepo } from "../../src/threads/ThreadsRepo.ts"
import * as TestDatabase from "../support/database.ts"
import { newProfileId } from "../support/profileRow.ts"

const START = Date.parse("2026-11-01T00:00:00Z")
/** `minutes` after `START`, epoch milliseconds. */
const at = (minutes: number) => START + minutes * 60_000

/** A recorded message of a thread (`null`: of none), as a turn leaves it. */
const record = (profileId: ProfileId, threadId: string | null, role: string, content: string, minutes: number) =>
  PgClient.PgClient.use(
    (sql) => sql`
      INSERT INTO messages (profile_id, role, content, thread_id, created_at)
      VALUES (${profileId}, ${role}, ${content}, ${threadId}, ${new Date(at(minutes))})`
  ).pipe(Effect.orDie)

layer(ThreadsRepo.layerTest.pipe(Layer.provideMerge(TestDatabase.layer)), { timeout: "60 seconds" })(
  "ThreadsRepo",
  (it) => {
    it.effect("restores a thread's messages oldest first, none of another thread or profile", () =>
      Effect.gen(function* () {
        const threads = yield* ThreadsRepo
        const profileId = yield* newProfileId
        const stranger = yield* newProfileId
        // Recorded out of order: the restore orders by when each was said.
        yield* record(profileId, "chat-1", "assistant", "Hello Ada", 2)
        yield* record(profileId, "chat-1", "user", "Hi, I'm Ada", 1)
        yield* record(profileId, "chat-1", "user", "What's the weather?", 3)
        yield* record(profileId, "chat-2", "user", "another thread", 2)
        yield* record(profileId, null, "user", "no thread", 2)
        yield* record(stranger, "chat-1", "user", "someone else's chat-1", 2)

        const { messages, digest } = yield* threads.latest(profileId, "chat-1")
        assert.deepStrictEqual(
          messages.map((m) => [m.role, m.content, m.createdAt]),
          [
            ["user", "Hi, I'm Ada", at(1)],
            ["assistant", "Hello Ada", at(2)],
            ["user", "What's the weather?", at(3)]
          ]
        )
        assert.isUndefined(digest)
        assert.deepStrictEqual(
          (yield* threads.messages(profileId, "chat-1")).map((m) => m.content),
          ["Hi, I'm Ada", "Hello Ada", "What's the weather?"]
        )
        assert.deepStrictEqual((yield* threads.latest(profileId, "chat-9")).messages, [])
      })
    )

    it.effect("lists a profile's threads, the most recently used first, with their lengths", () =>
      Effect.gen(function* () {
        const threads = yield* ThreadsRepo
        const profileId = yield* newProfileId
        yield* record(profileId, "old", "user", "first of old", 1)
        yield* record(profileId, "recent", "user", "first of recent", 2)
        yield* record(profileId, "old", "user", "old again, latest of all", 10)
        yield* record(profileId, "recent", "assistant", "reply", 5)
        yield* record(profileId, null, "user", "no thread, newest", 20)

        const listed = yield* threads.list(profileId)
        assert.deepStrictEqual(
          listed.map((t) => [
            t.threadId,
            t.messages,
            DateTime.toEpochMillis(t.firstAt),
            DateTime.toEpochMillis(t.lastAt)
          ]),
          [
            ["old", 2, at(1), at(10)],
            ["recent", 2, at(2), at(5)]
          ]
        )
        assert.deepStrictEqual(yield* threads.list(yield* newProfileId), [])
      })
    )

    it.effect("keeps the summary with the later cut: one written late up to an older cut is dropped", () =>
      Effect.gen(function* () {
        const threads = yield* ThreadsRepo
        const profileId = yield* newProfileId
        for (const minute of [1, 2, 3, 4]) yield* record(profileId, "long", "user", `message ${minute}`, minute)

        yield* threads.writeSummary(profileId, "long", { text: "up to 3", until: at(3) })
        yield* threads.writeSummary(profileId, "long", { text: "up to 2, late", until: at(2) })
        assert.deepStrictEqual((yield* threads.latest(profileId, "long")).digest, { text: "up to 3", until: at(3) })

        // What the next rewrite reads: the summary, and only the messages after its cut up to the new one.
        const next = yield* threads.unsummarized(profileId, "long", new Date(at(4)), 100)
        assert.deepStrictEqual(next.digest, { text: "up to 3", until: at(3) })
        assert.deepStrictEqual(
          next.messages.map((m) => m.content),
          ["message 4"]
        )

        yield* threads.writeSummary(profileId, "long", { text: "up to 4", until: at(4) })
        assert.deepStrictEqual((yield* threads.latest(profileId, "long")).digest, { text: "up to 4", until: at(4) })
      })
    )

    it.effect(
      "queues a thread's summary job once however many requests ask for it together, up to the latest cut",
      () =>
        Effect.gen(function* () {
          const sql = yield* PgClient.PgClient
          const threads = yield* ThreadsRepo
          const profileId = yield* newProfileId
          // Every connection of the pool open, so the requests below do run at once.
          yield* Effect.forEach(Array.from({ length: 8 }), () => sql`SELECT pg_sleep(0.05)`, {
            concurrency: "unbounded"
          })
          yield* Effect.forEach(
            Array.from({ length: 64 }, (_, index) => START + index * 1000),
            (until) => threads.queueSummary(profileId, "chat-1", until),
            { concurrency: "unbounded" }
          )
          const pending = yield* sql<{ until: string }>`
        SELECT input->>'until' AS until FROM extraction_jobs
        WHERE profile_id = ${profileId} AND kind = 'thread' AND status = 'pending'`.pipe(Effect.orDie)
          assert.strictEqual(pending.length, 1)
          assert.strictEqual(Date.parse(pending[0]!.until), START + 63_000)
        })
    )
  }
)
