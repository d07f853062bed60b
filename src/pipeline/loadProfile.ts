import { Effect, Metric, Option } from "effect"
import { DatabaseConfig } from "../db/DatabaseConfig.ts"
import { DatabaseHealth, requestsWithoutMemory } from "../db/DatabaseHealth.ts"
import { requestStage } from "../observability/requestSpan.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import type { ProfileSnapshot } from "../snapshots/SnapshotStore.ts"
import { takenUserId } from "./readRequest.ts"

/**
 * Stage 2: what is known about the user. From the cache when possible (no query at all), else
 * the profile is created if new and read in one round trip (and cached), within the database
 * deadline. Past the deadline, or with the database down, the request goes on with the last
 * snapshot this process knew, or else without memory (`Option.none`), unless `FAIL_OPEN=false`.
 */
export const loadProfile = Effect.fnUntraced(function* (userId: string) {
  const cache = yield* SnapshotCache
  const cached = yield* cache.lookup(userId)
  if (Option.isSome(cached)) return cached
  const profiles = yield* Profiles
  const loaded = (yield* DatabaseHealth).guard(
    profiles.getOrCreate(userId).pipe(
      Effect.catchTag("ExternalIdConflict", (conflict) => Effect.fail(takenUserId(conflict))),
      // `None` when the profile was erased between the two reads: the request goes on without memory.
      Effect.flatMap(({ profile }) => cache.load(profile))
    )
  )
  const { failOpen } = yield* DatabaseConfig
  return yield* loaded.pipe(
    Effect.catchTag("DatabaseUnavailable", (unavailable) => {
      // The last snapshot this process knew, if any, is better than none (it cannot be confirmed now).
      const lastKnown = cache.lastKnown(userId)
      if (Option.isSome(lastKnown)) return Effect.succeed(lastKnown)
      return failOpen
        ? Effect.as(Metric.update(requestsWithoutMemory, 1), Option.none<ProfileSnapshot>())
        : Effect.fail(unavailable)
    })
  )
}, requestStage("pipeline.loadProfile"))
