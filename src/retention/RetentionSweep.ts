import { Clock, Effect, Layer, Metric } from "effect"
import { repeatInBackground } from "../db/repeatInBackground.ts"
import { exportedIfWorked } from "../observability/idleSpans.ts"
import { retentionRemoved } from "../observability/metrics.ts"
import { NamespaceSettingsStore } from "../settings/NamespaceSettingsStore.ts"
import { BATCH, drain } from "./batches.ts"
import { RetentionConfig } from "./RetentionConfig.ts"
import { RetentionRepo } from "./RetentionRepo.ts"
import {
  type ExpiredIn,
  type HistoryRemoved,
  REMOVED_KINDS,
  type Removed,
  removedByNamespace,
  totalOf
} from "./removedCounts.ts"

/** The series of each kind, made once. */
const removedOf = Object.fromEntries(
  REMOVED_KINDS.map((kind) => [kind, Metric.withAttributes(retentionRemoved, { kind })])
) as Record<keyof Removed, Metric.Metric<number, unknown>>

/**
 * Each namespace's retention (its settings' `retention`): deletes the memories whose `expires_at` has
 * passed — in every namespace, since a caller may set one without a policy — as `memory.expired`, and, for
 * a namespace with `turnsDays`, its recorded turns older than that (thread turns included), the Responses
 * state stored with them (responses, conversation items) and what is left of them (summaries of threads
 * left without turns, conversations left without items). Memories and traits learned from the turns stay.
 * What each namespace lost is noted in its settings (`lastSweep`), logged and counted
 * (`gateway_retention_removed_total{kind}`). Every replica sweeps every `RETENTION_SWEEP_MS`, starting at
 * once (the deletes are idempotent, and a row is counted by the replica that removed it).
 */
export const RetentionSweep = Layer.effectDiscard(
  Effect.gen(function* () {
    const { sweepMs } = yield* RetentionConfig
    const repo = yield* RetentionRepo
    const settings = yield* NamespaceSettingsStore

    const expireMemories = Effect.gen(function* () {
      const expired: Array<ExpiredIn> = []
      while (true) {
        const batch = yield* repo.expireMemories(BATCH)
        expired.push(...batch)
        if (batch.reduce((sum, row) => sum + row.deleted, 0) < BATCH) return expired
        yield* Effect.yieldNow
      }
    })

    const removeHistory = (namespace: string, days: number) =>
      Effect.gen(function* () {
        const turns = yield* drain(repo.removeTurns({ namespace }, days, BATCH))
        const responses = yield* drain(repo.removeResponses({ namespace }, days, BATCH))
        const items = yield* drain(repo.removeConversationItems(namespace, days, BATCH))
        yield* repo.removeThreadSummaries({ namespace })
        yield* repo.removeEmptyConversations(namespace, days)
        return { namespace, turns, responses: responses + items } satisfies HistoryRemoved
      })

    const report = (namespace: string, removed: Removed, at: string) =>
      Effect.gen(function* () {
        yield* settings.noteSweep(namespace, { at, ...removed })
        yield* Effect.logInfo(
          `retention: namespace ${namespace} lost ${removed.memories} expired memories, ${removed.turns} turns, ` +
            `${removed.responses} responses`
        ).pipe(Effect.annotateLogs({ namespace, ...removed }))
      })

    /** How many rows went, of every kind. A sweep that found nothing to remove exports no span. */
    const sweep = exportedIfWorked(
      (removed: Removed) => removed.memories + removed.turns + removed.responses > 0,
      () =>
        Effect.gen(function* () {
          const at = new Date(yield* Clock.currentTimeMillis).toISOString()
          const expired = yield* expireMemories
          const released = yield* repo.releaseStranded
          if (released > 0) yield* Effect.logInfo(`retention: let go of ${released} images and files no job will read`)
          const history: Array<HistoryRemoved> = []
          for (const { namespace, retention } of yield* settings.withRetention)
            if (retention.turnsDays !== undefined) history.push(yield* removeHistory(namespace, retention.turnsDays))
          const removed = removedByNamespace(expired, history)
          for (const [namespace, counts] of removed) yield* report(namespace, counts, at)
          const total = totalOf(removed)
          for (const kind of REMOVED_KINDS) if (total[kind] > 0) yield* Metric.update(removedOf[kind], total[kind])
          yield* Effect.annotateCurrentSpan({ ...total })
          return total
        }).pipe(Effect.withSpan("RetentionSweep.sweep"))
    )

    yield* repeatInBackground(sweep, sweepMs, "namespace retention sweep failed")
  })
).pipe(Layer.provide([RetentionRepo.layer, NamespaceSettingsStore.layer]))
