import { Context, Effect, Layer, Schedule } from "effect"
import { withDeadline } from "../db/DatabaseHealth.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { SnapshotsRepo } from "../snapshots/SnapshotsRepo.ts"

/** How often injected memories' `last_accessed_at` is written. */
const FLUSH_EVERY = "1 second"
const TOUCH_DEADLINE_MS = 5000

/**
 * Remembers which memories were injected. The cached snapshot is updated at once (ranking sees
 * it on the next request); the database is updated once a second for all of them in one statement,
 * instead of a write per request. On shutdown what is left is written before the database closes.
 */
export class MemoryAccess extends Context.Service<
  MemoryAccess,
  {
    readonly note: (profileId: string, memoryIds: ReadonlyArray<string>, at: number) => Effect.Effect<void>
  }
>()("gateway/memories/MemoryAccess") {
  static readonly layer = Layer.effect(
    MemoryAccess,
    Effect.gen(function* () {
      const store = yield* SnapshotsRepo
      const cache = yield* SnapshotCache
      let accessed = new Set<string>()

      const flush = Effect.suspend(() => {
        if (accessed.size === 0) return Effect.void
        const ids = [...accessed]
        accessed = new Set()
        // Bounded: a frozen database must not hold up shutdown (the timestamps are only a ranking hint).
        return withDeadline(store.touch(ids), TOUCH_DEADLINE_MS)
      }).pipe(Effect.catchCause((cause) => Effect.logWarning("could not record memory access", cause)))

      yield* Effect.addFinalizer(() => flush)
      yield* Effect.forkScoped(Effect.repeat(flush, Schedule.spaced(FLUSH_EVERY)))

      return MemoryAccess.of({
        note: (profileId, memoryIds, at) =>
          Effect.andThen(
            Effect.sync(() => {
              for (const id of memoryIds) accessed.add(id)
            }),
            cache.markAccessed(profileId, memoryIds, at)
          )
      })
    })
  ).pipe(Layer.provide([SnapshotsRepo.layer, SnapshotCache.layer]))
}
