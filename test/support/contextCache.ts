import { Effect, Option } from "effect"
import type { Profile } from "../../src/domain/Profile.ts"
import { SnapshotCache } from "../../src/snapshots/SnapshotCache.ts"

/**
 * Loads the profile's context into the cache once the cache listens for changes (it is bypassed
 * until its change listener is up, which happens in the background after start).
 */
export const cached = Effect.fn("cached")(function* (profile: Profile) {
  const cache = yield* SnapshotCache
  yield* cache.awaitListening
  yield* cache.load(profile)
  if (Option.isNone(yield* cache.lookup(profile.namespace, profile.externalId)))
    return yield* Effect.die("the profile was not cached")
})
