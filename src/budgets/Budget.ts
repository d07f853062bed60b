import { Schema } from "effect"

/** Whose spending a budget caps: a key's, a namespace's, or each user's of a namespace. */
export const BudgetKind = Schema.Literals(["key", "namespace", "user"])
export type BudgetKind = typeof BudgetKind.Type

/** A budget's period: the UTC day or the UTC calendar month; it starts anew at the next one. */
export const BudgetPeriod = Schema.Literals(["day", "month"])
export type BudgetPeriod = typeof BudgetPeriod.Type

const PositiveTokens = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1e15 }))
const PositiveCost = Schema.Finite.check(Schema.isGreaterThan(0))

/**
 * A limit per period, in tokens (input and output, the memory work's included) or in cost (at the prices
 * of `MODEL_PRICES`; tokens of a model without a price cost nothing there): exactly one of the two.
 */
export const BudgetLimit = Schema.Struct({
  tokens: Schema.optionalKey(PositiveTokens),
  cost: Schema.optionalKey(PositiveCost),
  period: BudgetPeriod
}).check(
  Schema.makeFilter(
    (limit: { readonly tokens?: number; readonly cost?: number }) =>
      (limit.tokens === undefined) !== (limit.cost === undefined),
    { expected: "either tokens or cost" }
  )
)
export type BudgetLimit = typeof BudgetLimit.Type

/** A budget as stored: whose, in which namespace, and its limit. */
export interface Budget {
  readonly kind: BudgetKind
  readonly subject: string
  readonly namespace: string
  readonly limit: BudgetLimit
}

/** A budget as the API shows it: its limit, what its period has spent so far, and when it starts anew. */
export const BudgetState = Schema.Struct({
  tokens: Schema.optionalKey(Schema.Int),
  cost: Schema.optionalKey(Schema.Finite),
  period: BudgetPeriod,
  /** Spent this period: tokens, or cost (as the limit is given). */
  spent: Schema.Finite,
  remaining: Schema.Finite,
  resetsAt: Schema.DateTimeUtc
})
export type BudgetState = typeof BudgetState.Type
