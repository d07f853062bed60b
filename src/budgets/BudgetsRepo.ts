import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { decodeRows } from "../db/sqlResults.ts"
import { type Budget, BudgetKind, BudgetPeriod } from "./Budget.ts"

const BudgetRow = Schema.Struct({
  kind: BudgetKind,
  subject: Schema.String,
  namespace: Schema.String,
  tokens: Schema.NullOr(Schema.NumberFromString),
  cost: Schema.NullOr(Schema.NumberFromString),
  period: BudgetPeriod
})
type BudgetRow = typeof BudgetRow.Type

const budgetOf = (row: BudgetRow): Budget => ({
  kind: row.kind,
  subject: row.subject,
  namespace: row.namespace,
  limit: {
    ...(row.tokens === null ? {} : { tokens: row.tokens }),
    ...(row.cost === null ? {} : { cost: row.cost }),
    period: row.period
  }
})

/** Whose spending to sum since a day: a key's, a namespace's, or one user's of a namespace. */
export type Spender =
  | { readonly kind: "key"; readonly keyId: string; readonly since: string }
  | { readonly kind: "namespace"; readonly namespace: string; readonly since: string }
  | { readonly kind: "user"; readonly namespace: string; readonly userId: string; readonly since: string }

/** One spender's tokens since its day, per model (to be priced). */
export const SpentRow = Schema.Struct({
  spender: Schema.Int,
  model: Schema.String,
  input: Schema.Finite,
  cachedInput: Schema.Finite,
  cacheWrite: Schema.Finite,
  output: Schema.Finite
})
export type SpentRow = typeof SpentRow.Type

/** The spending, and which of the events asked about were written: both as of one snapshot. */
const Spent = Schema.Struct({ spent: Schema.Array(SpentRow), written: Schema.Array(Schema.String) })
type Spent = typeof Spent.Type

/** The SQL of budgets, and of what their subjects spent (read from the usage's day sums). */
export class BudgetsRepo extends Context.Service<
  BudgetsRepo,
  {
    readonly all: Effect.Effect<ReadonlyArray<Budget>>
    /** Changes whenever a budget is set or removed: a cheap check before reading them all. */
    readonly version: Effect.Effect<string>
    readonly put: (budget: Budget) => Effect.Effect<void>
    readonly remove: (kind: BudgetKind, subject: string) => Effect.Effect<Option.Option<Budget>>
    /**
     * Per spender (by its index in `spenders`) and model: the tokens of the usage days since its `since`;
     * and which of the `pending` events (ids) those days already hold, read in the same snapshot.
     */
    readonly spent: (spenders: ReadonlyArray<Spender>, pending: ReadonlyArray<string>) => Effect.Effect<Spent>
  }
>()("gateway/budgets/BudgetsRepo") {
  static readonly layer = Layer.effect(
    BudgetsRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const columns = sql`kind, subject, namespace, tokens::text AS tokens, cost::text AS cost, period`
      const rows = decodeRows(BudgetRow)

      const whereOf = (spender: Spender) => {
        switch (spender.kind) {
          case "key":
            return sql`key_id = ${spender.keyId}`
          case "namespace":
            return sql`namespace = ${spender.namespace}`
          case "user":
            return sql`namespace = ${spender.namespace} AND user_id = ${spender.userId}`
        }
      }

      return BudgetsRepo.of({
        all: sql`SELECT ${columns} FROM budgets`.pipe(
          rows,
          Effect.map((found) => found.map(budgetOf)),
          Effect.orDie
        ),
        version: sql`SELECT count(*)::text || ':' || coalesce(max(updated_at)::text, '') AS version FROM budgets`.pipe(
          decodeRows(Schema.Struct({ version: Schema.String })),
          Effect.map((found) => found[0]!.version),
          Effect.orDie
        ),
        put: (budget) =>
          sql`
            INSERT INTO budgets (kind, subject, namespace, tokens, cost, period)
            VALUES (${budget.kind}, ${budget.subject}, ${budget.namespace}, ${budget.limit.tokens ?? null},
                    ${budget.limit.cost ?? null}, ${budget.limit.period})
            ON CONFLICT (kind, subject) DO UPDATE SET namespace = excluded.namespace, tokens = excluded.tokens,
              cost = excluded.cost, period = excluded.period, updated_at = now()`.pipe(Effect.asVoid, Effect.orDie),
        remove: (kind, subject) =>
          sql`DELETE FROM budgets WHERE kind = ${kind} AND subject = ${subject} RETURNING ${columns}`.pipe(
            rows,
            Effect.map((found) => Option.map(Option.fromUndefinedOr(found[0]), budgetOf)),
            Effect.orDie
          ),
        spent: (spenders, pending) => {
          const perSpender = spenders.map(
            (spender, index) => sql`
              SELECT ${index}::int AS spender, model, sum(input_tokens) AS input,
                     sum(cached_input_tokens) AS "cachedInput", sum(cache_write_tokens) AS "cacheWrite",
                     sum(output_tokens) AS output
              FROM usage_daily WHERE ${whereOf(spender)} AND day >= ${spender.since}::date
              GROUP BY model`
          )
          return sql`
            SELECT
              coalesce((SELECT json_agg(s) FROM (${sql.join(" UNION ALL ", false)(perSpender)}) s), '[]') AS spent,
              coalesce((SELECT json_agg(id::text) FROM usage_events
                        WHERE ${pending.length === 0 ? sql`false` : sql`id IN ${sql.in(pending)}`}), '[]') AS written`.pipe(
            decodeRows(Spent),
            Effect.map((found) => found[0]!),
            Effect.orDie
          )
        }
      })
    })
  )
}
