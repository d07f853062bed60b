import { randomUUID } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { Profiles } from "../../src/profiles/Profiles.ts"
import { SnapshotCache } from "../../src/snapshots/SnapshotCache.ts"
import { cached } from "../support/contextCache.ts"
import * as TestDatabase from "../support/database.ts"

layer(Profiles.layerTest.pipe(Layer.provideMerge(TestDatabase.layer)), { timeout: "60 seconds" })("Profiles", (it) => {
  it.effect("creates a profile on first use, then finds the same one by external id or by internal id", () =>
    Effect.gen(function* () {
      const profiles = yield* Profiles
      const first = yield* profiles.getOrCreate("ada")
      const again = yield* profiles.getOrCreate("ada")
      assert.isTrue(first.created)
      assert.isFalse(again.created)
      assert.strictEqual(again.profile.id, first.profile.id)
      assert.strictEqual((yield* profiles.find("ada")).id, first.profile.id)
      assert.strictEqual((yield* profiles.find(first.profile.id)).externalId, "ada")
    })
  )

  it.effect(
    "reads a UUID ref as an internal id only, and refuses another profile's internal id as an external id",
    () =>
      Effect.gen(function* () {
        const profiles = yield* Profiles
        const { profile: grace } = yield* profiles.getOrCreate("grace")
        // A user whose own id happens to be a UUID gets a profile, but a path with that UUID does not reach it.
        const lookalike = randomUUID()
        assert.isTrue((yield* profiles.getOrCreate(lookalike)).created)
        const notFound = yield* profiles.find(lookalike).pipe(Effect.flip)
        assert.strictEqual(notFound._tag, "ProfileNotFound")

        const conflict = yield* profiles.getOrCreate(grace.id).pipe(Effect.flip)
        assert.strictEqual(conflict._tag, "ExternalIdConflict")
        assert.strictEqual((yield* profiles.find(grace.id)).externalId, "grace")
      })
  )

  it.effect("deletes a profile with its traits and memories, and says what it removed", () =>
    Effect.gen(function* () {
      const profiles = yield* Profiles
      const sql = yield* PgClient.PgClient
      const { profile } = yield* profiles.getOrCreate("leaving")
      yield* sql`INSERT INTO traits (profile_id, key, value, value_type, category, confidence, source)
                 VALUES (${profile.id}, 'name', '"Lea"', 'string', 'identity', 1, 'manual')`
      yield* sql`INSERT INTO memories (profile_id, content, type) VALUES (${profile.id}, 'Moves to Oslo', 'event')`

      const removed = yield* profiles.remove("leaving")
      assert.deepStrictEqual(removed.profile, { id: profile.id, externalId: "leaving" })
      assert.deepStrictEqual(removed.deleted, { traits: 1, memories: 1, messages: 0 })
      const [left] = yield* sql<{ traits: number; memories: number }>`
        SELECT (SELECT count(*) FROM traits WHERE profile_id = ${profile.id})::int AS traits,
               (SELECT count(*) FROM memories WHERE profile_id = ${profile.id})::int AS memories`
      assert.deepStrictEqual(left, { traits: 0, memories: 0 })
      assert.strictEqual((yield* profiles.find(profile.id).pipe(Effect.flip))._tag, "ProfileNotFound")
    })
  )

  it.effect("drops the profile's cached context when its summary changes, before the change returns", () =>
    Effect.gen(function* () {
      const profiles = yield* Profiles
      const cache = yield* SnapshotCache
      const { profile } = yield* profiles.getOrCreate("cached")
      yield* cached(profile)

      yield* profiles.setSummary("cached", "Writes compilers.")
      assert.isTrue(Option.isNone(yield* cache.lookup("default", "cached")))
      const fresh = Option.getOrThrow(yield* cache.snapshot(yield* profiles.find("cached")))
      assert.strictEqual(fresh.profile.summary, "Writes compilers.")
    })
  )
})
