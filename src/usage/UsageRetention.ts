import { Effect, Layer } from "effect"
import { repeatInBackground } from "../db/repeatInBackground.ts"
import { exportedIfWorked } from "../observability/idleSpans.ts"
import { UsageConfig } from "./UsageConfig.ts"
import { UsageRepo } from "./UsageRepo.ts"

/** Rows one statement deletes at most, so a first sweep over a long history never holds long locks. */
const BATCH = 5000

/**
 * Deletes each provider call's own usage row past `USAGE_RETENTION_DAYS`; the per-day sums stay.
 * Every replica sweeps every `USAGE_RETENTION_SWEEP_MS` (the deletes are idempotent), starting at once.
 */
export const UsageRetention = Layer.effectDiscard(
  Effect.gen(function* () {
    const { retentionDays, sweepMs } = yield* UsageConfig
    const repo = yield* UsageRepo

    const sweep = exportedIfWorked(
      (deleted: number) => deleted > 0,
      () =>
        Effect.gen(function* () {
          let deleted = 0
          while (true) {
            const batch = yield* repo.prune(retentionDays, BATCH)
            deleted += batch
            if (batch < BATCH) break
            yield* Effect.yieldNow
          }
          yield* Effect.annotateCurrentSpan("deleted", deleted)
          return deleted
        }).pipe(Effect.withSpan("UsageRetention.sweep"))
    )

    yield* repeatInBackground(sweep, sweepMs, "usage retention sweep failed")
  })
).pipe(Layer.provide(UsageRepo.layer))
