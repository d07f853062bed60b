import { randomUUID } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Cause, Clock, Context, Effect, Latch, Layer, Metric, Option, PubSub, Queue, type Scope } from "effect"
import { DatabaseConfig } from "../db/DatabaseConfig.ts"
import { forkListener } from "../db/forkListener.ts"
import { namespacedUser } from "../domain/Namespace.ts"
import { type Profile, SHARED_PROFILE_ID } from "../domain/Profile.ts"
import { contextCacheLookups } from "../observability/metrics.ts"
import { type ProfileSnapshot, SnapshotsRepo } from "./SnapshotsRepo.ts"

/** Triggers on profiles, traits and memories notify this channel with the profile id on every change. */
const CHANNEL = "profile_changed"

/** How many recent invalidations are remembered to keep a slow load from caching what just changed. */
const REMEMBERED_INVALIDATIONS = 10_000

/** A marker's payload starts with this (a profile id never does). */
const MARKER = "~"
/**
 * A namespace's shared profile was created (migration 0030): the payload is this and its name. Its
 * absence, cached until then, is dropped.
 */
const SHARED_CREATED = "shared:"
/** Markers sent per fence window: the cache stays usable while the database answers them promptly. */
const MARKS_PER_FENCE = 4

/** How long start-up waits for the cache to become usable. */
const STARTUP_WAIT_MS = 2000

/** The fence measures real time, whatever clock a test gives the rest. */
const liveClock = Clock.Clock.defaultValue()
const liveSleep = (ms: number) => Effect.provideService(Effect.sleep(ms), Clock.Clock, liveClock)

interface Entry {
  readonly snapshot: ProfileSnapshot
  readonly expiresAt: number
}

const hit = Metric.withAttributes(contextCacheLookups, { result: "hit" })
const miss = Metric.withAttributes(contextCacheLookups, { result: "miss" })

const userKeyOfProfile = (profile: Profile) => namespacedUser(profile.namespace, profile.externalId)

/**
 * Profile snapshots (profile, traits, candidate memories) kept in memory between requests, so a
 * request for a known user needs no profile query. Exact invalidation: every write to a profile,
 * its traits or memories — in this process or any other replica — notifies `profile_changed`
 * (database triggers), and this process drops the entry; its own writes drop it at once, before
 * they return. Entries also expire after `CONTEXT_CACHE_TTL_MS`. While the notification listener
 * is down the cache is bypassed, since changes from other replicas would go unnoticed.
 *
 * The fence (`CONTEXT_CACHE_FENCE_MS`, W): notifications arrive late when the database is slow, so
 * each process also notifies the channel with markers of its own, several per W, and uses its cache
 * only while it has heard back a marker sent less than W ago. PostgreSQL delivers notifications in
 * commit order, so that marker proves every change committed before it was sent has been applied
 * here: a change that committed more than W ago is never served stale, on any replica. A profile's
 * DELETE waits W (`fence`) before it answers, so no replica serves an erased profile after that.
 * While the database is unavailable, a request may still use the last snapshot known (`lastKnown`).
 *
 * A namespace's shared knowledge is its shared profile's snapshot, kept like a user's; a namespace
 * without a shared profile is remembered as such for the TTL (`lookupShared`), so its requests ask
 * nothing, until the profile's creation (`invalidateShared` here, a `shared:<namespace>` notification
 * from any replica) drops that.
 */
export class SnapshotCache extends Context.Service<
  SnapshotCache,
  {
    /** The cached snapshot of a user of a namespace. */
    readonly lookup: (namespace: string, externalId: string) => Effect.Effect<Option.Option<ProfileSnapshot>>
    /** The cached snapshot of a user, as `lookup` finds it, but not counted as a request's lookup. */
    readonly cached: (namespace: string, externalId: string) => Effect.Effect<Option.Option<ProfileSnapshot>>
    /** The snapshot kept for a user, however old and whether the fence holds or not: for when the database is unavailable. */
    readonly lastKnown: (namespace: string, externalId: string) => Option.Option<ProfileSnapshot>
    /**
     * Reads the snapshot from the database and caches it, unless the profile changed meanwhile.
     * `None` once the profile is erased.
     */
    readonly load: (profile: Profile) => Effect.Effect<Option.Option<ProfileSnapshot>>
    /** The cached snapshot of a profile, or a fresh one (`None` once it is erased); not counted as a request's lookup. */
    readonly snapshot: (profile: Profile) => Effect.Effect<Option.Option<ProfileSnapshot>>
    readonly invalidate: (profileId: string) => Effect.Effect<void>
    /**
     * The namespace's shared knowledge (its shared profile's snapshot) as this process knows it:
     * `None` when it does not; `Some(None)` when the namespace has none (its absence is cached too,
     * until the shared profile is created, here or on another replica). Not counted as a user's lookup.
     */
    readonly lookupShared: (namespace: string) => Effect.Effect<Option.Option<Option.Option<ProfileSnapshot>>>
    /** Reads the namespace's shared profile from the database and caches its snapshot, or that it has none. */
    readonly loadShared: (namespace: string) => Effect.Effect<Option.Option<ProfileSnapshot>>
    /** The namespace's shared knowledge, cached or read. */
    readonly sharedSnapshot: (namespace: string) => Effect.Effect<Option.Option<ProfileSnapshot>>
    /** The namespace has a shared profile now: its cached absence is dropped. */
    readonly invalidateShared: (namespace: string) => Effect.Effect<void>
    /** Keeps cached memories' `lastAccessedAt` in step with the database after an injection. */
    readonly markAccessed: (profileId: string, memoryIds: ReadonlyArray<string>, at: number) => Effect.Effect<void>
    /** How many profiles are cached now. */
    readonly size: () => number
    /** Waits until change notifications arrive and the fence holds (until then the cache is bypassed). */
    readonly awaitListening: Effect.Effect<void>
    /** Waits until every replica's cache has applied the changes committed before it was called (W). */
    readonly fence: Effect.Effect<void>
    /** The profile ids whose change notifications this process applies, from now on (for tests and diagnostics). */
    readonly subscribeChanges: Effect.Effect<PubSub.Subscription<string>, never, Scope.Scope>
  }
>()("gateway/snapshots/SnapshotCache") {
  static readonly layer = Layer.effect(
    SnapshotCache,
    Effect.gen(function* () {
      const settings = (yield* DatabaseConfig).contextCache
      const store = yield* SnapshotsRepo
      const sql = yield* PgClient.PgClient
      // By user (`userKey`: a user id is unique only within its namespace).
      const entries = new Map<string, Entry>()
      const userKeyOf = new Map<string, string>()
      // Namespaces known to have no shared profile, until when (a namespace's requests then look for none).
      const noShared = new Map<string, number>()
      const invalidatedAt = new Map<string, number>()
      let tick = 0
      let listening = false
      const changes = yield* PubSub.unbounded<string>()
      const enabled = settings.size > 0
      // A disabled cache has nothing to wait for.
      const listeningLatch = Latch.makeUnsafe(!enabled)

      // The fence's markers: this process's own, numbered; when each was sent (performance.now()).
      const ownMarker = `${MARKER}${randomUUID()}:`
      const markersSent = new Map<number, number>()
      let markerCount = 0
      let confirmedAt = Number.NEGATIVE_INFINITY
      const fenced = settings.fenceMs > 0
      const usable = () => listening && (!fenced || performance.now() - confirmedAt <= settings.fenceMs)

      /** A marker heard back: every change committed before it was sent has been applied. */
      const heard = (payload: string) => {
        if (!payload.startsWith(ownMarker)) return Effect.void
        const n = Number(payload.slice(ownMarker.length))
        const sentAt = markersSent.get(n)
        for (const k of markersSent.keys()) {
          if (k > n) break
          markersSent.delete(k)
        }
        if (sentAt === undefined) return Effect.void
        confirmedAt = Math.max(confirmedAt, sentAt)
        return listeningLatch.open
      }

      const sendMarker = Effect.suspend(() => {
        const n = ++markerCount
        markersSent.set(n, performance.now())
        // Markers that never come back (notifications lost) are forgotten, oldest first.
        if (markersSent.size > MARKS_PER_FENCE * 100) markersSent.delete(markersSent.keys().next().value!)
        return sql`SELECT pg_notify(${CHANNEL}, ${ownMarker + n})`
        // A heartbeat several times a second, never work: it leaves no span.
      }).pipe(Effect.withTracerEnabled(false))

      /** A profile changed (its id), or a namespace's shared profile was created (`SHARED_CREATED` and its name). */
      const drop = (profileId: string) => {
        tick++
        invalidatedAt.delete(profileId)
        invalidatedAt.set(profileId, tick)
        if (invalidatedAt.size > REMEMBERED_INVALIDATIONS) invalidatedAt.delete(invalidatedAt.keys().next().value!)
        if (profileId.startsWith(SHARED_CREATED)) noShared.delete(profileId.slice(SHARED_CREATED.length))
        const user = userKeyOf.get(profileId)
        if (user !== undefined) {
          entries.delete(user)
          userKeyOf.delete(profileId)
        }
      }

      const clear = () => {
        tick++
        entries.clear()
        userKeyOf.clear()
        noShared.clear()
      }

      // Effect's Clock, not Date.now(): a test moves it to expire an entry without waiting.
      const cachedOf = (user: string) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const entry = enabled && usable() ? entries.get(user) : undefined
          if (entry === undefined || entry.expiresAt < now) {
            if (entry !== undefined) drop(entry.snapshot.profile.id)
            return Option.none<ProfileSnapshot>()
          }
          // Most recently used last: the first entry is the one to evict.
          entries.delete(user)
          entries.set(user, entry)
          return Option.some(entry.snapshot)
        })

      // Only the request path's lookups count in the hit ratio (background readers would inflate it).
      const lookup = (namespace: string, externalId: string) =>
        Effect.tap(cachedOf(namespacedUser(namespace, externalId)), (found) =>
          Metric.update(Option.isSome(found) ? hit : miss, 1)
        )

      const load = Effect.fn("SnapshotCache.load")(function* (profile: Profile) {
        // The position is taken before anything is read: a change whose notification arrives while
        // the snapshot is read (or a change of the profile row read earlier by the caller, which the
        // snapshot reads again) keeps the result out of the cache.
        const started = tick
        const found = yield* store.snapshot(profile)
        if (Option.isNone(found)) return found
        const snapshot = found.value
        const changedSince = (invalidatedAt.get(profile.id) ?? 0) > started
        if (enabled && listening && !changedSince) {
          const user = userKeyOfProfile(profile)
          entries.set(user, { snapshot, expiresAt: (yield* Clock.currentTimeMillis) + settings.ttlMs })
          userKeyOf.set(profile.id, user)
          if (entries.size > settings.size) {
            const [oldest, entry] = entries.entries().next().value!
            entries.delete(oldest)
            userKeyOf.delete(entry.snapshot.profile.id)
          }
        }
        return found
      })

      const sharedKey = (namespace: string) => namespacedUser(namespace, SHARED_PROFILE_ID)

      const lookupShared = (namespace: string) =>
        Effect.flatMap(cachedOf(sharedKey(namespace)), (found) =>
          Option.isSome(found)
            ? Effect.succeed(Option.some(found))
            : Effect.map(Clock.currentTimeMillis, (now) => {
                const until = enabled && usable() ? noShared.get(namespace) : undefined
                if (until === undefined || until < now) {
                  if (until !== undefined) noShared.delete(namespace)
                  return Option.none<Option.Option<ProfileSnapshot>>()
                }
                return Option.some(Option.none<ProfileSnapshot>())
              })
        )

      const loadShared = Effect.fn("SnapshotCache.loadShared")(function* (namespace: string) {
        // As `load`: a creation heard while the row is looked for keeps the absence out of the cache.
        const started = tick
        const profile = yield* store.sharedProfile(namespace)
        if (Option.isSome(profile)) return yield* load(profile.value)
        const createdSince = (invalidatedAt.get(SHARED_CREATED + namespace) ?? 0) > started
        if (enabled && listening && !createdSince) {
          noShared.delete(namespace)
          noShared.set(namespace, (yield* Clock.currentTimeMillis) + settings.ttlMs)
          if (noShared.size > settings.size) noShared.delete(noShared.keys().next().value!)
        }
        return Option.none<ProfileSnapshot>()
      })

      const sharedSnapshot = (namespace: string) =>
        Effect.flatMap(lookupShared(namespace), (known) =>
          Option.isSome(known) ? Effect.succeed(known.value) : loadShared(namespace)
        )

      const markAccessed = (profileId: string, memoryIds: ReadonlyArray<string>, at: number) =>
        Effect.sync(() => {
          const user = userKeyOf.get(profileId)
          const entry = user === undefined ? undefined : entries.get(user)
          if (entry === undefined) return
          for (const id of memoryIds) {
            const memory = entry.snapshot.memories.byId.get(id)
            if (memory !== undefined) memory.lastAccessedAt = at
          }
        })

      if (enabled) {
        const listen = Effect.scoped(
          Effect.gen(function* () {
            const notifications = yield* sql.listen(CHANNEL)
            clear()
            listening = true
            if (fenced) yield* Effect.forkChild(Effect.ignore(sendMarker))
            else yield* listeningLatch.open
            yield* Queue.take(notifications).pipe(
              Effect.tap(({ payload }) => {
                if (payload.startsWith(MARKER)) return heard(payload)
                drop(payload)
                return PubSub.publish(changes, payload)
              }),
              Effect.forever
            )
          })
        ).pipe(
          Effect.ensuring(
            Effect.suspend(() => {
              listening = false
              confirmedAt = Number.NEGATIVE_INFINITY
              markersSent.clear()
              clear()
              return listeningLatch.close
            })
          ),
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.failCause(cause)
              : Effect.logWarning(
                  "profile change notifications lost; context cache bypassed until they are back",
                  cause
                ).pipe(Effect.andThen(Effect.sleep("1 second")))
          ),
          Effect.forever
        )
        yield* forkListener(listen)
        if (fenced) {
          // One marker at a time: on a frozen database the loop waits instead of piling statements up.
          const marking = Effect.gen(function* () {
            if (listening) yield* sendMarker
            yield* liveSleep(settings.fenceMs / MARKS_PER_FENCE)
          }).pipe(
            Effect.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : liveSleep(settings.fenceMs)
            ),
            Effect.forever
          )
          yield* forkListener(marking)
        }
        // Ready before the port opens, so the first requests can use it (a slow database only delays this).
        yield* listeningLatch.await.pipe(
          Effect.timeoutOption(STARTUP_WAIT_MS),
          Effect.provideService(Clock.Clock, liveClock)
        )
      }

      const snapshot = (profile: Profile) =>
        Effect.flatMap(cachedOf(userKeyOfProfile(profile)), (cached) =>
          Option.isSome(cached) && cached.value.profile.id === profile.id ? Effect.succeed(cached) : load(profile)
        )

      return SnapshotCache.of({
        lookup,
        cached: (namespace, externalId) => cachedOf(namespacedUser(namespace, externalId)),
        lastKnown: (namespace, externalId) =>
          Option.fromUndefinedOr(enabled ? entries.get(namespacedUser(namespace, externalId))?.snapshot : undefined),
        load,
        snapshot,
        invalidate: (profileId) => Effect.sync(() => drop(profileId)),
        lookupShared,
        loadShared,
        sharedSnapshot,
        invalidateShared: (namespace) => Effect.sync(() => drop(SHARED_CREATED + namespace)),
        markAccessed,
        size: () => entries.size,
        awaitListening: listeningLatch.await,
        fence: fenced ? liveSleep(settings.fenceMs) : Effect.void,
        subscribeChanges: PubSub.subscribe(changes)
      })
    })
  ).pipe(Layer.provide([SnapshotsRepo.layer]))
}
