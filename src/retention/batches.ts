import { Effect } from "effect"

/** Rows one statement deletes at most, so a first sweep over a large history never holds long locks. */
export const BATCH = 5000

/** Runs a batch until one comes back short; how many rows went. */
export const drain = (batch: Effect.Effect<number>) =>
  Effect.gen(function* () {
    let deleted = 0
    while (true) {
      const count = yield* batch
      deleted += count
      if (count < BATCH) return deleted
      yield* Effect.yieldNow
    }
  })
