import { PgClient } from "@effect/sql-pg"
import { Cause, Clock, Context, Effect, Latch, Layer, Metric, Option, PubSub, Queue, type Scope } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import type { Profile } from "../domain/Profile.ts"
import { contextCacheLookups } from "../observability/metrics.ts"
import { ContextStore, type ProfileSnapshot } from "./ContextStore.ts"
import { forkListener } from "./forkListener.ts"

/** Triggers on profiles, traits and memories notify this channel with the profile id on every change. */
const CHANNEL = "profile_changed"

/** How many recent invalidations are remembered to keep a slow load from caching what just changed. */
const REMEMBERED_INVALIDATIONS = 10_000

interface Entry {
  readonly snapshot: ProfileSnapshot
  readonly expiresAt: number
}

const hit = Metric.withAttributes(contextCacheLookups, { result: "hit" })
const miss = Metric.withAttributes(contextCacheLookups, { result: "miss" })

/**
 * Profile snapshots (profile, traits, candidate memories) kept in memory between requests, so a
 * request for a known user needs no profile query. Exact invalidation: every write to a profile,
 * its traits or memories — in this process or any other replica — notifies `profile_changed`
 * (database triggers), and this process drops the entry; its own writes drop it at once, before
 * they return. Entries also expire after `CONTEXT_CACHE_TTL_MS`. While the notification listener
 * is down the cache is bypassed, since changes from other replicas would go unnoticed.
 */
export class ContextCache extends Context.Service<ContextCache, {
  readonly lookup: (externalId: string) => Effect.Effect<Option.Option<ProfileSnapshot>>
  /**
   * Reads the snapshot from the database and caches it, unless the profile changed meanwhile.
   * `None` once the profile is erased.
   */
  readonly load: (profile: Profile) => Effect.Effect<Option.Option<ProfileSnapshot>>
  /** The cached snapshot of a profile, or a fresh one (`None` once it is erased); not counted as a request's lookup. */
  readonly snapshot: (profile: Profile) => Effect.Effect<Option.Option<ProfileSnapshot>>
  readonly invalidate: (profileId: string) => Effect.Effect<void>
  /** Keeps cached memories' `lastAccessedAt` in step with the database after an injection. */
  readonly markAccessed: (profileId: string, memoryIds: ReadonlyArray<string>, at: number) => Effect.Effect<void>
  /** How many profiles are cached now. */
  readonly size: () => number
  /** Waits until change notifications arrive (until then the cache is bypassed). */
  readonly awaitListening: Effect.Effect<void>
  /** The profile ids whose change notifications this process applies, from now on (for tests and diagnostics). */
  readonly subscribeChanges: Effect.Effect<PubSub.Subscription<string>, never, Scope.Scope>
}>()("gateway/store/ContextCache") {
  static readonly layer = Layer.effect(
    ContextCache,
    Effect.gen(function*() {
      const settings = (yield* AppConfig).contextCache
      const store = yield* ContextStore
      const sql = yield* PgClient.PgClient
      const entries = new Map<string, Entry>()
      const externalIdOf = new Map<string, string>()
      const invalidatedAt = new Map<string, number>()
      let tick = 0
      let listening = false
      const changes = yield* PubSub.unbounded<string>()
      const enabled = settings.size > 0
      // A disabled cache has nothing to wait for.
      const listeningLatch = Latch.makeUnsafe(!enabled)

      const drop = (profileId: string) => {
        tick++
        invalidatedAt.delete(profileId)
        invalidatedAt.set(profileId, tick)
        if (invalidatedAt.size > REMEMBERED_INVALIDATIONS) invalidatedAt.delete(invalidatedAt.keys().next().value!)
        const externalId = externalIdOf.get(profileId)
        if (externalId !== undefined) {
          entries.delete(externalId)
          externalIdOf.delete(profileId)
        }
      }

      const clear = () => {
        tick++
        entries.clear()
        externalIdOf.clear()
      }

      // Effect's Clock, not Date.now(): a test moves it to expire an entry without waiting.
      const cachedOf = (externalId: string) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const entry = enabled && listening ? entries.get(externalId) : undefined
          if (entry === undefined || entry.expiresAt < now) {
            if (entry !== undefined) drop(entry.snapshot.profile.id)
            return Option.none<ProfileSnapshot>()
          }
          // Most recently used last: the first entry is the one to evict.
          entries.delete(externalId)
          entries.set(externalId, entry)
          return Option.some(entry.snapshot)
        })

      // Only the request path's lookups count in the hit ratio (background readers would inflate it).
      const lookup = (externalId: string) =>
        Effect.tap(cachedOf(externalId), (found) => Metric.update(Option.isSome(found) ? hit : miss, 1))

      const load = Effect.fn("ContextCache.load")(function*(profile: Profile) {
        // The position is taken before anything is read: a change whose notification arrives while
        // the snapshot is read (or a change of the profile row read earlier by the caller, which the
        // snapshot reads again) keeps the result out of the cache.
        const started = tick
        const found = yield* store.snapshot(profile)
        if (Option.isNone(found)) return found
        const snapshot = found.value
        const changedSince = (invalidatedAt.get(profile.id) ?? 0) > started
        if (enabled && listening && !changedSince) {
          entries.set(profile.externalId, { snapshot, expiresAt: (yield* Clock.currentTimeMillis) + settings.ttlMs })
          externalIdOf.set(profile.id, profile.externalId)
          if (entries.size > settings.size) {
            const [oldest, entry] = entries.entries().next().value!
            entries.delete(oldest)
            externalIdOf.delete(entry.snapshot.profile.id)
          }
        }
        return found
      })

      const markAccessed = (profileId: string, memoryIds: ReadonlyArray<string>, at: number) =>
        Effect.sync(() => {
          const externalId = externalIdOf.get(profileId)
          const entry = externalId === undefined ? undefined : entries.get(externalId)
          if (entry === undefined) return
          for (const id of memoryIds) {
            const memory = entry.snapshot.memories.byId.get(id)
            if (memory !== undefined) memory.lastAccessedAt = at
          }
        })

      if (enabled) {
        const listen = Effect.scoped(
          Effect.gen(function*() {
            const notifications = yield* sql.listen(CHANNEL)
            clear()
            listening = true
            yield* listeningLatch.open
            yield* Queue.take(notifications).pipe(
              Effect.tap((notification) => {
                drop(notification.payload)
                return PubSub.publish(changes, notification.payload)
              }),
              Effect.forever
            )
          })
        ).pipe(
          Effect.ensuring(Effect.suspend(() => {
            listening = false
            clear()
            return listeningLatch.close
          })),
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.failCause(cause)
              : Effect.logWarning("profile change notifications lost; context cache bypassed until they are back", cause)
                .pipe(Effect.andThen(Effect.sleep("1 second")))
          ),
          Effect.forever
        )
        yield* forkListener(listen)
      }

      const snapshot = (profile: Profile) =>
        Effect.flatMap(cachedOf(profile.externalId), (cached) =>
          Option.isSome(cached) && cached.value.profile.id === profile.id ? Effect.succeed(cached) : load(profile))

      return ContextCache.of({
        lookup,
        load,
        snapshot,
        invalidate: (profileId) => Effect.sync(() => drop(profileId)),
        markAccessed,
        size: () => entries.size,
        awaitListening: listeningLatch.await,
        subscribeChanges: PubSub.subscribe(changes)
      })
    })
  )
}
