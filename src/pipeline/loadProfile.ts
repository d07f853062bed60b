import { Effect, Metric, Option } from "effect"
import { DatabaseConfig } from "../db/DatabaseConfig.ts"
import { DatabaseHealth, requestsWithoutMemory } from "../db/DatabaseHealth.ts"
import { SHARED_PROFILE_ID } from "../domain/Profile.ts"
import { takenUserId } from "../identity/userClaim.ts"
import { requestStage } from "../observability/requestSpan.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import type { ProfileSnapshot } from "../snapshots/SnapshotsRepo.ts"

/** What a request knows: its user's profile, and its namespace's shared knowledge (none: `Option.none`). */
interface LoadedProfile {
  readonly snapshot: Option.Option<ProfileSnapshot>
  readonly shared: Option.Option<ProfileSnapshot>
}

const NONE: Option.Option<ProfileSnapshot> = Option.none()

/**
 * Stage 2: what is known about the user. From the cache when possible (no query at all), else
 * the profile is created if new and read in one round trip (and cached), within the database
 * deadline. Past the deadline, or with the database down, the request goes on with the last
 * snapshot this process knew, or else without memory (`Option.none`), unless `FAIL_OPEN=false`.
 *
 * With `withShared`, the namespace's shared knowledge too, from the same cache (a namespace without
 * any is cached as such: no query either); when it is not cached, it is read beside the user's
 * profile. It never fails a request: without the database, the last one known or none.
 */
export const makeLoadProfile = Effect.gen(function* () {
  const cache = yield* SnapshotCache
  const profiles = yield* Profiles
  const health = yield* DatabaseHealth
  const { failOpen } = yield* DatabaseConfig

  const user = Effect.fnUntraced(function* (namespace: string, userId: string) {
    const cached = yield* cache.lookup(namespace, userId)
    if (Option.isSome(cached)) return cached
    const loaded = health.guard(
      profiles.getOrCreate(userId).pipe(
        Effect.catchTag("ExternalIdConflict", (conflict) => Effect.fail(takenUserId(conflict))),
        // `None` when the profile was erased between the two reads: the request goes on without memory.
        Effect.flatMap(({ profile }) => cache.load(profile))
      )
    )
    return yield* loaded.pipe(
      Effect.catchTag("DatabaseUnavailable", (unavailable) => {
        // The last snapshot this process knew, if any, is better than none (it cannot be confirmed now).
        const lastKnown = cache.lastKnown(namespace, userId)
        if (Option.isSome(lastKnown)) return Effect.succeed(lastKnown)
        return failOpen
          ? Effect.as(Metric.update(requestsWithoutMemory, 1), Option.none<ProfileSnapshot>())
          : Effect.fail(unavailable)
      })
    )
  })

  const shared = (namespace: string) =>
    health
      .guard(cache.loadShared(namespace))
      .pipe(Effect.catchTag("DatabaseUnavailable", () => Effect.succeed(cache.lastKnown(namespace, SHARED_PROFILE_ID))))

  return Effect.fnUntraced(function* (namespace: string, userId: string, withShared: boolean) {
    const known = withShared ? yield* cache.lookupShared(namespace) : Option.some(NONE)
    if (Option.isSome(known)) {
      const snapshot = yield* user(namespace, userId)
      return { snapshot, shared: Option.isSome(snapshot) ? known.value : NONE } satisfies LoadedProfile
    }
    const [snapshot, loaded] = yield* Effect.all([user(namespace, userId), shared(namespace)], { concurrency: 2 })
    return { snapshot, shared: Option.isSome(snapshot) ? loaded : NONE } satisfies LoadedProfile
  }, requestStage("pipeline.loadProfile"))
})
