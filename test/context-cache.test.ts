import { PgClient } from "@effect/sql-pg"
import { assert, describe, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option, PubSub, Schema } from "effect"
import { TestClock } from "effect/testing"
import { AppConfig } from "../src/app/AppConfig.ts"
import { Profile, SHARED_PROFILE_ID } from "../src/domain/Profile.ts"
import { Embedder } from "../src/embedding/Embedder.ts"
import { SnapshotCache } from "../src/snapshots/SnapshotCache.ts"
import { SnapshotsRepo } from "../src/snapshots/SnapshotsRepo.ts"
import { UpstreamHttp } from "../src/upstream/UpstreamHttp.ts"
import { cached } from "./support/contextCache.ts"
import * as TestDatabase from "./support/database.ts"

/** The cache and the store under it (not the whole gateway), configured by `settings`, on a fresh database. */
const cacheWith = (settings: Record<string, string>) =>
  SnapshotCache.layer.pipe(
    Layer.provideMerge(SnapshotsRepo.layer),
    Layer.provide(Embedder.layer),
    Layer.provide(UpstreamHttp.layer),
    Layer.provideMerge(AppConfig.layer),
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ EMBEDDINGS: "off", ...settings }))),
    Layer.provideMerge(TestDatabase.layer)
  )

const TTL_MS = 60_000

/** The cache on a fresh database of the run's PostgreSQL; its clock is the test's `TestClock`. */
const CacheOnDatabase = cacheWith({ CONTEXT_CACHE_TTL_MS: String(TTL_MS) })

const newProfile = Effect.fn("newProfile")(function* (externalId: string) {
  const sql = yield* PgClient.PgClient
  const rows = yield* sql`INSERT INTO profiles (external_id) VALUES (${externalId}) RETURNING *`
  return yield* Schema.decodeUnknownEffect(Profile)(rows[0])
})

layer(CacheOnDatabase, { timeout: "60 seconds" })("the context cache", (it) => {
  it.effect("serves a profile from memory until CONTEXT_CACHE_TTL_MS has passed, then reads it again", () =>
    Effect.gen(function* () {
      const cache = yield* SnapshotCache
      const profile = yield* newProfile("ttl")
      yield* cached(profile)

      yield* TestClock.adjust(TTL_MS)
      assert.isTrue(Option.isSome(yield* cache.lookup("default", "ttl")), "still fresh at the end of its TTL")
      yield* TestClock.adjust(1)
      assert.isTrue(Option.isNone(yield* cache.lookup("default", "ttl")), "expired one millisecond later")

      // The next request reads the profile again and keeps it for another TTL.
      yield* cache.snapshot(profile)
      yield* TestClock.adjust(TTL_MS - 1)
      assert.isTrue(Option.isSome(yield* cache.lookup("default", "ttl")))
    })
  )

  it.effect("drops a profile as soon as the database says it changed, long before its TTL", () =>
    Effect.gen(function* () {
      const cache = yield* SnapshotCache
      const sql = yield* PgClient.PgClient
      const profile = yield* newProfile("changed")
      yield* cached(profile)
      // A write from anywhere (here straight SQL, as another replica's would be) notifies every cache.
      const changes = yield* cache.subscribeChanges
      yield* sql`INSERT INTO memories (profile_id, content, type) VALUES (${profile.id}, 'Moved to Lisbon', 'fact')`
      while ((yield* PubSub.take(changes)) !== profile.id) {
        /* another profile's change */
      }
      assert.isTrue(Option.isNone(yield* cache.lookup("default", "changed")))
      const fresh = Option.getOrThrow(yield* cache.snapshot(profile))
      assert.deepStrictEqual(
        fresh.memories.memories.map((memory) => memory.content),
        ["Moved to Lisbon"]
      )
    }).pipe(Effect.scoped)
  )

  it.effect("never keeps a profile row read before a change that committed before the load", () =>
    Effect.gen(function* () {
      const cache = yield* SnapshotCache
      const sql = yield* PgClient.PgClient
      yield* cache.awaitListening
      const before = yield* newProfile("raced")
      // Another replica changes the summary after this request read the profile row, and this
      // process hears of it before it loads the rest.
      const changes = yield* cache.subscribeChanges
      yield* sql`UPDATE profiles SET summary = 'Moved to Lisbon' WHERE id = ${before.id}`
      while ((yield* PubSub.take(changes)) !== before.id) {
        /* another profile's change */
      }
      const loaded = Option.getOrThrow(yield* cache.load(before))
      assert.strictEqual(loaded.profile.summary, "Moved to Lisbon")
      assert.strictEqual(Option.getOrThrow(yield* cache.lookup("default", "raced")).profile.summary, "Moved to Lisbon")
    }).pipe(Effect.scoped)
  )

  it.effect("knows a namespace has no shared knowledge without asking again, until its shared profile is created", () =>
    Effect.gen(function* () {
      const cache = yield* SnapshotCache
      const sql = yield* PgClient.PgClient
      yield* cache.awaitListening
      assert.isTrue(Option.isNone(yield* cache.lookupShared("acme")), "not known before it is read")
      assert.isTrue(Option.isNone(yield* cache.loadShared("acme")))
      const none = yield* cache.lookupShared("acme")
      assert.isTrue(Option.isSome(none) && Option.isNone(none.value), "known to have none")
      yield* TestClock.adjust(TTL_MS + 1)
      assert.isTrue(Option.isNone(yield* cache.lookupShared("acme")), "forgotten after CONTEXT_CACHE_TTL_MS")
      yield* cache.loadShared("acme")

      // Created anywhere (here straight SQL, as another replica's write would be): every cache hears of it.
      const changes = yield* cache.subscribeChanges
      yield* sql`INSERT INTO profiles (namespace, external_id, shared) VALUES ('acme', ${SHARED_PROFILE_ID}, true)`
      while ((yield* PubSub.take(changes)) !== "shared:acme") {
        /* another profile's change */
      }
      assert.isTrue(Option.isNone(yield* cache.lookupShared("acme")))
      assert.isTrue(Option.isSome(yield* cache.loadShared("acme")))
      const known = yield* cache.lookupShared("acme")
      assert.isTrue(Option.isSome(known) && Option.isSome(known.value), "its snapshot cached")
      // Another namespace's absence is its own.
      assert.isTrue(Option.isNone(yield* cache.loadShared("globex")))
    }).pipe(Effect.scoped)
  )

  it.effect("loads nothing for a profile erased after it was looked up", () =>
    Effect.gen(function* () {
      const cache = yield* SnapshotCache
      const sql = yield* PgClient.PgClient
      yield* cache.awaitListening
      const profile = yield* newProfile("erased")
      yield* sql`DELETE FROM profiles WHERE id = ${profile.id}`
      assert.isTrue(Option.isNone(yield* cache.load(profile)))
      assert.isTrue(Option.isNone(yield* cache.lookup("default", "erased")))
    })
  )
})

describe("a cache of size 0", () => {
  const Disabled = cacheWith({ CONTEXT_CACHE_SIZE: "0" })

  layer(Disabled, { timeout: "60 seconds" })((it) => {
    it.effect("keeps nothing: every request reads the database", () =>
      Effect.gen(function* () {
        const cache = yield* SnapshotCache
        const profile = yield* newProfile("uncached")
        yield* cache.load(profile)
        assert.isTrue(Option.isNone(yield* cache.lookup("default", "uncached")))
        assert.strictEqual(cache.size(), 0)
      })
    )
  })
})
