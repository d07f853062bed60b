import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import type { Profile } from "../../src/domain/Profile.ts"
import { ContextCache } from "../../src/store/ContextCache.ts"

/**
 * Loads the profile's context into the cache, again until it stays: the cache is bypassed until its
 * change listener is up, which happens in the background after start.
 */
export const cached = Effect.fn("cached")(function*(profile: Profile) {
  const cache = yield* ContextCache
  yield* cache.load(profile)
  while (Option.isNone(yield* cache.lookup(profile.externalId))) {
    yield* TestClock.withLive(Effect.sleep("10 millis"))
    yield* cache.load(profile)
  }
})
