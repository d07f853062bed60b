import { Schema } from "effect"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"
import { BudgetKind, BudgetPeriod } from "./Budget.ts"

const WHOSE: Record<BudgetKind, string> = { key: "key's", namespace: "namespace's", user: "user's" }

/** A request whose key, namespace or user has spent its budget for the period: 429 until the next one. */
export class BudgetExceeded
  extends Schema.TaggedError<BudgetExceeded>()("BudgetExceeded", {
    kind: BudgetKind,
    unit: Schema.Literals(["tokens", "cost"]),
    limit: Schema.Finite,
    spent: Schema.Finite,
    period: BudgetPeriod,
    /** Epoch milliseconds. */
    resetsAt: Schema.Finite,
    now: Schema.Finite
  })
  implements ClientFacing<429>
{
  get clientError() {
    const amount = (value: number) => (this.unit === "tokens" ? `${value} tokens` : `${value.toFixed(4)} in cost`)
    const resets = new Date(this.resetsAt).toISOString()
    return clientError(
      429,
      "budget_exceeded",
      `The ${WHOSE[this.kind]} budget for this ${this.period} is spent (${amount(this.spent)} of ${amount(this.limit)}); it starts anew at ${resets}`,
      { headers: { "retry-after": String(Math.max(1, Math.ceil((this.resetsAt - this.now) / 1000))) } }
    )
  }
}
