import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Schema } from "effect"
import { repeatInBackground } from "../db/repeatInBackground.ts"
import { decodeRows } from "../db/sqlResults.ts"
import { exportedIfWorked } from "../observability/idleSpans.ts"
import { ThreadsConfig } from "./ThreadsConfig.ts"

/** Rows one statement deletes at most, so a first sweep over a large history never holds long locks. */
const BATCH = 5000

const Deleted = Schema.Struct({ deleted: Schema.Int })

/**
 * Deletes conversation history past its namespace's retention (`THREAD_RETENTION_DAYS`): the turns
 * recorded in a thread, the summaries of threads left without turns, and the Responses API responses
 * the gateway stored. Memories and traits learned from them stay. Every replica sweeps every
 * `THREAD_RETENTION_SWEEP_MS` (the deletes are idempotent), starting at once.
 */
export const ThreadRetention = Layer.effectDiscard(
  Effect.gen(function* () {
    const { retention, sweepMs } = yield* ThreadsConfig
    if (retention.days === undefined && retention.byNamespace.size === 0) return
    const sql = yield* PgClient.PgClient
    const named = [...retention.byNamespace.keys()]

    /** The profiles one retention applies to: one namespace's, or every other one's. */
    const profilesOf = (namespace: string | undefined) =>
      namespace === undefined
        ? sql`(SELECT id FROM profiles WHERE namespace NOT IN (SELECT jsonb_array_elements_text(${sql.json(named)})))`
        : sql`(SELECT id FROM profiles WHERE namespace = ${namespace})`

    const batchOf = (deleted: ReadonlyArray<{ readonly deleted: number }>) => deleted[0]?.deleted ?? 0

    /** Deletes in batches until a batch comes back short; how many rows went. */
    const drain = (statement: Effect.Effect<number>) =>
      Effect.gen(function* () {
        let deleted = 0
        while (true) {
          const batch = yield* statement
          deleted += batch
          if (batch < BATCH) return deleted
          yield* Effect.yieldNow
        }
      })

    const sweepOne = (namespace: string | undefined, days: number) => {
      const profiles = profilesOf(namespace)
      const before = sql`now() - ${days} * interval '1 day'`
      return Effect.all([
        drain(
          sql`
            WITH gone AS (
              DELETE FROM messages WHERE id IN (
                SELECT id FROM messages WHERE thread_id IS NOT NULL AND created_at < ${before}
                  AND profile_id IN ${profiles} LIMIT ${BATCH})
              RETURNING 1)
            SELECT count(*)::int AS deleted FROM gone`.pipe(decodeRows(Deleted), Effect.orDie, Effect.map(batchOf))
        ),
        drain(
          sql`
            WITH gone AS (
              DELETE FROM stored_responses WHERE (profile_id, id) IN (
                SELECT profile_id, id FROM stored_responses
                WHERE created_at < ${before} AND profile_id IN ${profiles} LIMIT ${BATCH})
              RETURNING 1)
            SELECT count(*)::int AS deleted FROM gone`.pipe(decodeRows(Deleted), Effect.orDie, Effect.map(batchOf))
        ),
        sql`
          WITH gone AS (
            DELETE FROM thread_summaries t WHERE t.profile_id IN ${profiles}
              AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.profile_id = t.profile_id AND m.thread_id = t.thread_id)
            RETURNING 1)
          SELECT count(*)::int AS deleted FROM gone`.pipe(decodeRows(Deleted), Effect.orDie, Effect.map(batchOf))
      ]).pipe(Effect.map((counts) => counts.reduce((sum, n) => sum + n, 0)))
    }

    /** How many rows went. A sweep that found nothing past its retention exports no span. */
    const sweep = exportedIfWorked(
      (deleted: number) => deleted > 0,
      () =>
        Effect.gen(function* () {
          let deleted = 0
          if (retention.days !== undefined) deleted += yield* sweepOne(undefined, retention.days)
          for (const [namespace, days] of retention.byNamespace) deleted += yield* sweepOne(namespace, days)
          yield* Effect.annotateCurrentSpan("deleted", deleted)
          return deleted
        }).pipe(Effect.withSpan("ThreadRetention.sweep"))
    )

    yield* repeatInBackground(sweep, sweepMs, "retention sweep failed")
  })
)
