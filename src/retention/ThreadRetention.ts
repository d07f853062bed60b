import { Effect, Layer } from "effect"
import { repeatInBackground } from "../db/repeatInBackground.ts"
import { exportedIfWorked } from "../observability/idleSpans.ts"
import { ThreadsConfig } from "../threads/ThreadsConfig.ts"
import { BATCH, drain } from "./batches.ts"
import { type HistoryScope, RetentionRepo } from "./RetentionRepo.ts"

/**
 * Deletes conversation history past the environment's retention (`THREAD_RETENTION_DAYS`, per namespace
 * or for every other one): the turns recorded in a thread, the summaries of threads left without turns,
 * and the Responses API responses the gateway stored. Memories and traits learned from them stay. Every
 * replica sweeps every `THREAD_RETENTION_SWEEP_MS` (the deletes are idempotent), starting at once. A
 * namespace's own `retention` (its settings) is `RetentionSweep`'s.
 */
export const ThreadRetention = Layer.effectDiscard(
  Effect.gen(function* () {
    const { retention, sweepMs } = yield* ThreadsConfig
    if (retention.days === undefined && retention.byNamespace.size === 0) return
    const repo = yield* RetentionRepo

    const sweepOne = (scope: HistoryScope, days: number) =>
      Effect.all([
        drain(repo.removeTurns(scope, days, BATCH, { threadsOnly: true })),
        drain(repo.removeResponses(scope, days, BATCH)),
        repo.removeThreadSummaries(scope)
      ]).pipe(Effect.map((counts) => counts.reduce((sum, n) => sum + n, 0)))

    /** How many rows went. A sweep that found nothing past its retention exports no span. */
    const sweep = exportedIfWorked(
      (deleted: number) => deleted > 0,
      () =>
        Effect.gen(function* () {
          let deleted = 0
          if (retention.days !== undefined)
            deleted += yield* sweepOne({ allBut: [...retention.byNamespace.keys()] }, retention.days)
          for (const [namespace, days] of retention.byNamespace) deleted += yield* sweepOne({ namespace }, days)
          yield* Effect.annotateCurrentSpan("deleted", deleted)
          return deleted
        }).pipe(Effect.withSpan("ThreadRetention.sweep"))
    )

    yield* repeatInBackground(sweep, sweepMs, "retention sweep failed")
  })
).pipe(Layer.provide(RetentionRepo.layer))
