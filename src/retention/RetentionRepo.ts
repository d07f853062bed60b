import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Schema } from "effect"
import { decodeRows, decodeTotal } from "../db/sqlResults.ts"
import type { ExpiredIn } from "./removedCounts.ts"

const ExpiredRow = Schema.Struct({ namespace: Schema.String, deleted: Schema.Int })

/** Whose history a removal reaches: one namespace's, or (`THREAD_RETENTION_DAYS`) every namespace's but some. */
export type HistoryScope = { readonly namespace: string } | { readonly allBut: ReadonlyArray<string> }

/**
 * What the retention sweep deletes, a batch per statement (`limit` rows at most), each statement its own
 * transaction: removals are idempotent, and a row another replica removed first is not counted here
 * (a delete's `RETURNING` holds only the rows this statement removed).
 */
export class RetentionRepo extends Context.Service<
  RetentionRepo,
  {
    /**
     * Deletes memories whose `expires_at` has passed, in any namespace, as `memory.expired` (the webhook
     * trigger of migration 0029 reads `gateway.expiring`); their vectors go with them (cascade), the
     * memories they superseded become current again (`ON DELETE SET NULL`), and each profile's cached
     * snapshot is dropped (the `profile_changed` triggers). How many went, by namespace.
     */
    readonly expireMemories: (limit: number) => Effect.Effect<ReadonlyArray<ExpiredIn>>
    /**
     * Deletes the recorded turns older than `days` (`threadsOnly`: those recorded in a thread), with their
     * attachments.
     */
    readonly removeTurns: (
      scope: HistoryScope,
      days: number,
      limit: number,
      options?: { readonly threadsOnly: boolean }
    ) => Effect.Effect<number>
    /** Deletes the stored Responses API responses older than `days`. */
    readonly removeResponses: (scope: HistoryScope, days: number, limit: number) => Effect.Effect<number>
    /** Deletes the summaries of threads left without turns. */
    readonly removeThreadSummaries: (scope: HistoryScope) => Effect.Effect<number>
    /** Deletes the namespace's conversation items older than `days`, their conversations' sizes kept in step. */
    readonly removeConversationItems: (namespace: string, days: number, limit: number) => Effect.Effect<number>
    /** Deletes the namespace's conversations older than `days` left without items. */
    readonly removeEmptyConversations: (namespace: string, days: number) => Effect.Effect<void>
    /**
     * Lets go of images and files still held an hour after their turn with no extraction job left to read
     * them (a job that failed for good while the release after it could not be written, a job removed):
     * only their digest stays, as after an extraction. How many.
     */
    readonly releaseStranded: Effect.Effect<number>
  }
>()("gateway/retention/RetentionRepo") {
  static readonly layer = Layer.effect(
    RetentionRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient

      const profilesOf = (namespace: string) => sql`(SELECT id FROM profiles WHERE namespace = ${namespace})`
      const profilesIn = (scope: HistoryScope) =>
        "namespace" in scope
          ? profilesOf(scope.namespace)
          : sql`(SELECT id FROM profiles WHERE namespace NOT IN (SELECT jsonb_array_elements_text(${sql.json(scope.allBut)})))`
      const before = (days: number) => sql`now() - ${days} * interval '1 day'`

      const expireMemories = (limit: number) =>
        sql
          .withTransaction(
            Effect.gen(function* () {
              yield* sql`SELECT set_config('gateway.expiring', 'on', true)`
              // SKIP LOCKED: replicas sweeping together take different rows, and a memory being written
              // (or marked as used) waits for the next sweep instead of holding this one.
              return yield* sql`
                WITH gone AS (
                  DELETE FROM memories WHERE id IN (
                    SELECT id FROM memories WHERE expires_at <= now()
                    ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
                  RETURNING profile_id)
                SELECT p.namespace, count(*)::int AS deleted
                FROM gone JOIN profiles p ON p.id = gone.profile_id
                GROUP BY p.namespace`
            })
          )
          .pipe(decodeRows(ExpiredRow), Effect.orDie)

      const removeTurns = (
        scope: HistoryScope,
        days: number,
        limit: number,
        options: { readonly threadsOnly: boolean } = { threadsOnly: false }
      ) =>
        sql`
          WITH gone AS (
            DELETE FROM messages WHERE id IN (
              SELECT id FROM messages
              WHERE profile_id IN ${profilesIn(scope)} AND created_at < ${before(days)}
                AND ${options.threadsOnly ? sql`thread_id IS NOT NULL` : sql`true`}
              LIMIT ${limit})
            RETURNING 1)
          SELECT count(*)::int AS total FROM gone`.pipe(decodeTotal, Effect.orDie)

      const removeResponses = (scope: HistoryScope, days: number, limit: number) =>
        sql`
          WITH gone AS (
            DELETE FROM stored_responses WHERE (profile_id, id) IN (
              SELECT profile_id, id FROM stored_responses
              WHERE profile_id IN ${profilesIn(scope)} AND created_at < ${before(days)} LIMIT ${limit})
            RETURNING 1)
          SELECT count(*)::int AS total FROM gone`.pipe(decodeTotal, Effect.orDie)

      const removeThreadSummaries = (scope: HistoryScope) =>
        sql`
          WITH gone AS (
            DELETE FROM thread_summaries t WHERE t.profile_id IN ${profilesIn(scope)}
              AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.profile_id = t.profile_id AND m.thread_id = t.thread_id)
            RETURNING 1)
          SELECT count(*)::int AS total FROM gone`.pipe(decodeTotal, Effect.orDie)

      const removeConversationItems = (namespace: string, days: number, limit: number) =>
        sql`
          WITH gone AS (
            DELETE FROM conversation_items WHERE (conversation_id, id) IN (
              SELECT i.conversation_id, i.id FROM conversation_items i
              JOIN conversations c ON c.id = i.conversation_id
              WHERE c.profile_id IN ${profilesOf(namespace)} AND i.created_at < ${before(days)} LIMIT ${limit})
            RETURNING conversation_id, octet_length(item::text) AS bytes
          ), shrunk AS (
            UPDATE conversations c SET size_bytes = c.size_bytes - g.bytes
            FROM (SELECT conversation_id, sum(bytes) AS bytes FROM gone GROUP BY conversation_id) g
            WHERE c.id = g.conversation_id
          )
          SELECT count(*)::int AS total FROM gone`.pipe(decodeTotal, Effect.orDie)

      const removeEmptyConversations = (namespace: string, days: number) =>
        sql`
          DELETE FROM conversations c WHERE c.profile_id IN ${profilesOf(namespace)}
            AND c.created_at < ${before(days)}
            AND NOT EXISTS (SELECT 1 FROM conversation_items i WHERE i.conversation_id = c.id)`.pipe(
          Effect.orDie,
          Effect.asVoid
        )

      const releaseStranded = sql`
        WITH released AS (
          UPDATE message_attachments a SET data = NULL, url = NULL, text = NULL, extracted_at = now()
          WHERE a.extracted_at IS NULL AND (a.data IS NOT NULL OR a.url IS NOT NULL OR a.text IS NOT NULL)
            AND a.created_at < now() - interval '1 hour'
            AND NOT EXISTS (SELECT 1 FROM extraction_jobs j
                            WHERE j.status IN ('pending', 'running') AND a.message_id = ANY (j.message_ids))
          RETURNING 1)
        SELECT count(*)::int AS total FROM released`.pipe(Effect.orDie, decodeTotal)

      return RetentionRepo.of({
        expireMemories,
        removeTurns,
        removeResponses,
        removeConversationItems,
        removeThreadSummaries,
        removeEmptyConversations,
        releaseStranded
      })
    })
  )
}
