import { PgClient } from "@effect/sql-pg"
import { Context, type DateTime, Effect, Layer, Schema } from "effect"
import { decodeRows, decodeTotal } from "../db/sqlResults.ts"
import type { NamespaceScope } from "../domain/Namespace.ts"
import { UsageWork } from "../domain/Usage.ts"
import type { UsageGrouping, UsagePeriod } from "./UsageReport.ts"

/** One event as it is written: ids and time chosen in the process, so a retried write stores nothing twice. */
export interface UsageEventRow {
  readonly id: string
  readonly at: string
  readonly namespace: string
  readonly keyId: string
  readonly userId: string
  readonly profileId: string | null
  readonly work: UsageWork
  readonly provider: string
  readonly api: string
  readonly model: string
  readonly reported: boolean
  readonly input: number
  readonly cachedInput: number
  readonly cacheWrite: number
  readonly output: number
  readonly reasoning: number
  readonly injected: number
}

/** The row as `jsonb_to_recordset` reads it (JSON is not renamed to the columns' case). */
const asColumns = (event: UsageEventRow) => ({
  id: event.id,
  at: event.at,
  namespace: event.namespace,
  key_id: event.keyId,
  user_id: event.userId,
  profile_id: event.profileId,
  work: event.work,
  provider: event.provider,
  api: event.api,
  model: event.model,
  reported: event.reported,
  input: event.input,
  cached_input: event.cachedInput,
  cache_write: event.cacheWrite,
  output: event.output,
  reasoning: event.reasoning,
  injected: event.injected
})

const Total = Schema.NumberFromString.pipe(Schema.decodeTo(Schema.Int))

/** The tokens of some events, summed. */
export const TokenSums = Schema.Struct({
  requests: Total,
  unreported: Total,
  input: Total,
  cachedInput: Total,
  cacheWrite: Total,
  output: Total,
  reasoning: Total,
  injected: Total
})
export type TokenSums = typeof TokenSums.Type

/** What one write stored, per namespace, model and work (for the metrics). */
export const WrittenSums = Schema.Struct({
  namespace: Schema.String,
  model: Schema.String,
  work: UsageWork,
  ...TokenSums.fields
})
export type WrittenSums = typeof WrittenSums.Type

/** A report's rows before prices: per group, model and work. */
export const GroupSums = Schema.Struct({
  group: Schema.String,
  model: Schema.String,
  work: UsageWork,
  lastAt: Schema.DateTimeUtcFromDate,
  ...TokenSums.fields
})
export type GroupSums = typeof GroupSums.Type

/** One key's usage on some days with one model. */
export const KeySums = Schema.Struct({
  keyId: Schema.String,
  model: Schema.String,
  today: Schema.Boolean,
  /** The app's requests (else the memory work done with the key's provider key). */
  app: Schema.Boolean,
  ...TokenSums.fields
})
export type KeySums = typeof KeySums.Type

const LastUsed = Schema.Struct({ keyId: Schema.String, lastAt: Schema.DateTimeUtcFromDate })

/** Which rows a report reads besides its period: a namespace (or all), and one user or key of it. */
export interface UsageFilter {
  readonly scope: NamespaceScope
  readonly userId?: string | undefined
  readonly keyId?: string | undefined
}

/**
 * The SQL of token usage: each write stores the events and adds them to their day's sums in one
 * statement (an event already stored adds nothing); every read sums the days.
 */
export class UsageRepo extends Context.Service<
  UsageRepo,
  {
    readonly write: (events: ReadonlyArray<UsageEventRow>) => Effect.Effect<ReadonlyArray<WrittenSums>>
    readonly report: (
      grouping: UsageGrouping,
      period: UsagePeriod,
      filter: UsageFilter
    ) => Effect.Effect<ReadonlyArray<GroupSums>>
    /** Keys' usage since a day, per key, model and whether the day is `today`; and each key's last use ever. */
    readonly ofKeys: (
      keyIds: ReadonlyArray<string>,
      since: string,
      today: string
    ) => Effect.Effect<{
      readonly sums: ReadonlyArray<KeySums>
      readonly lastUsed: ReadonlyArray<{ readonly keyId: string; readonly lastAt: DateTime.Utc }>
    }>
    /** Deletes the events (not the days' sums) older than `days`, a batch at a time; the number deleted. */
    readonly prune: (days: number, batch: number) => Effect.Effect<number>
  }
>()("gateway/usage/UsageRepo") {
  static readonly layer = Layer.effect(
    UsageRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const sums = sql`
        sum(requests)::text AS requests, sum(unreported)::text AS unreported,
        sum(input_tokens)::text AS input, sum(cached_input_tokens)::text AS cached_input,
        sum(cache_write_tokens)::text AS cache_write, sum(output_tokens)::text AS output,
        sum(reasoning_tokens)::text AS reasoning, sum(injected_tokens)::text AS injected`
      const groupColumn: Record<UsageGrouping, string> = {
        key: "key_id",
        user: "user_id",
        model: "model",
        namespace: "namespace",
        day: "to_char(day, 'YYYY-MM-DD')",
        work: "work"
      }

      return UsageRepo.of({
        write: (events) =>
          sql`
            WITH given AS (
              SELECT r.id, r.at,
                     -- Memory work knows its profile only: the namespace and user id are the profile's (a
                     -- namespace's shared profile is no user's: its work is the namespace's alone).
                     coalesce(nullif(r.namespace, ''), p.namespace, '') AS namespace,
                     r.key_id, coalesce(nullif(r.user_id, ''), CASE WHEN NOT p.shared THEN p.external_id END, '') AS user_id,
                     r.profile_id,
                     r.work, r.provider, r.api, r.model, r.reported, r.input, r.cached_input, r.cache_write,
                     r.output, r.reasoning, r.injected
              FROM jsonb_to_recordset(${sql.json(events.map(asColumns))})
                AS r(id uuid, at timestamptz, namespace text, key_id text, user_id text, profile_id uuid, work text,
                     provider text, api text, model text, reported boolean, input bigint, cached_input bigint,
                     cache_write bigint, output bigint, reasoning bigint, injected bigint)
              LEFT JOIN profiles p ON p.id = r.profile_id
            ),
            inserted AS (
              INSERT INTO usage_events (id, at, namespace, key_id, user_id, profile_id, work, provider, api, model,
                                        reported, input_tokens, cached_input_tokens, cache_write_tokens,
                                        output_tokens, reasoning_tokens, injected_tokens)
              SELECT * FROM given
              ON CONFLICT (id) DO NOTHING
              RETURNING *
            ),
            daily AS (
              INSERT INTO usage_daily AS d (day, namespace, key_id, user_id, work, provider, model, requests, unreported,
                                            input_tokens, cached_input_tokens, cache_write_tokens, output_tokens,
                                            reasoning_tokens, injected_tokens, last_at)
              SELECT (at AT TIME ZONE 'UTC')::date, namespace, key_id, user_id, work, provider, model, count(*),
                     count(*) FILTER (WHERE NOT reported), sum(input_tokens), sum(cached_input_tokens),
                     sum(cache_write_tokens), sum(output_tokens), sum(reasoning_tokens), sum(injected_tokens), max(at)
              FROM inserted
              GROUP BY 1, 2, 3, 4, 5, 6, 7
              -- One order for every writer: two replicas adding to the same days never wait on each other in a circle.
              ORDER BY 2, 1, 3, 4, 5, 6, 7
              ON CONFLICT (namespace, day, key_id, user_id, work, provider, model) DO UPDATE SET
                requests = d.requests + excluded.requests,
                unreported = d.unreported + excluded.unreported,
                input_tokens = d.input_tokens + excluded.input_tokens,
                cached_input_tokens = d.cached_input_tokens + excluded.cached_input_tokens,
                cache_write_tokens = d.cache_write_tokens + excluded.cache_write_tokens,
                output_tokens = d.output_tokens + excluded.output_tokens,
                reasoning_tokens = d.reasoning_tokens + excluded.reasoning_tokens,
                injected_tokens = d.injected_tokens + excluded.injected_tokens,
                last_at = greatest(d.last_at, excluded.last_at)
            )
            SELECT namespace, model, work,
                   count(*)::text AS requests, count(*) FILTER (WHERE NOT reported)::text AS unreported,
                   sum(input_tokens)::text AS input, sum(cached_input_tokens)::text AS cached_input,
                   sum(cache_write_tokens)::text AS cache_write, sum(output_tokens)::text AS output,
                   sum(reasoning_tokens)::text AS reasoning, sum(injected_tokens)::text AS injected
            FROM inserted
            GROUP BY namespace, model, work`.pipe(decodeRows(WrittenSums), Effect.orDie),

        report: (grouping, period, filter) =>
          sql`
            SELECT ${sql.literal(groupColumn[grouping])} AS "group", model, work, max(last_at) AS last_at, ${sums}
            FROM usage_daily
            WHERE day BETWEEN ${period.from}::date AND ${period.to}::date
              AND ${filter.scope._tag === "One" ? sql`namespace = ${filter.scope.name}` : sql`true`}
              AND ${filter.userId === undefined ? sql`true` : sql`user_id = ${filter.userId}`}
              AND ${filter.keyId === undefined ? sql`true` : sql`key_id = ${filter.keyId}`}
            GROUP BY 1, model, work`.pipe(decodeRows(GroupSums), Effect.orDie),

        ofKeys: (keyIds, since, today) =>
          Effect.all(
            {
              sums: sql`
                SELECT key_id, model, day = ${today}::date AS today, work = 'app' AS app, ${sums}
                FROM usage_daily WHERE key_id IN ${sql.in(keyIds)} AND day >= ${since}::date
                GROUP BY 1, 2, 3, 4`.pipe(decodeRows(KeySums)),
              lastUsed: sql`
                SELECT key_id, max(last_at) AS last_at FROM usage_daily
                WHERE key_id IN ${sql.in(keyIds)} GROUP BY key_id`.pipe(decodeRows(LastUsed))
            },
            { concurrency: 2 }
          ).pipe(Effect.orDie),

        prune: (days, batch) =>
          sql`
            WITH old AS (
              SELECT id FROM usage_events WHERE at < now() - make_interval(days => ${days}) LIMIT ${batch}
            )
            , gone AS (DELETE FROM usage_events e USING old WHERE e.id = old.id RETURNING 1)
            SELECT count(*)::int AS total FROM gone`.pipe(decodeTotal, Effect.orDie)
      })
    })
  )
}
