import { Clock, Context, DateTime, Effect, Layer, Option } from "effect"
import { withDeadline } from "../db/DatabaseHealth.ts"
import { followVersion } from "../db/repeatInBackground.ts"
import { ModelPrices } from "../usage/ModelPrices.ts"
import { UsageRecorder } from "../usage/UsageRecorder.ts"
import type { UsageEventRow } from "../usage/UsageRepo.ts"
import type { Budget, BudgetKind, BudgetLimit, BudgetState } from "./Budget.ts"
import { BudgetExceeded } from "./BudgetExceeded.ts"
import { BudgetsRepo, type Spender, type SpentRow } from "./BudgetsRepo.ts"
import { periodAt } from "./periods.ts"

/** How often each replica reads the budgets again (a change made on this one applies at once). */
const RELOAD_EVERY = "1 second"
/** A budget check the database does not answer in time lets the request through (and says so in the log). */
const CHECK_DEADLINE_MS = 2000

/** Who a request spends for. */
export interface Spending {
  readonly namespace: string
  readonly keyId: string | undefined
  readonly userId: string | undefined
}

/** What is left of the budgets a request is under, before it: the least of each unit. */
export interface BudgetRemaining {
  readonly tokens?: number
  readonly cost?: number
}

const indexKey = (kind: BudgetKind, subject: string) => `${kind}:${subject}`

const tokensOf = (row: { readonly input: number; readonly output: number }) => row.input + row.output

/**
 * Budgets: a limit of tokens or cost per UTC day or month on a key, a namespace, or each user of a
 * namespace. A request is checked against every budget it is under before it goes to the provider:
 * what the period has spent is the usage's day sums in the database plus this replica's usage not
 * written yet; one spent answers 429 `budget_exceeded` until the period starts anew. What a request
 * spends is known only once it has answered, so a budget may be passed by the requests in flight when
 * it ran out (on one replica, one after another: by one request).
 */
export class Budgets extends Context.Service<
  Budgets,
  {
    readonly check: (spending: Spending) => Effect.Effect<BudgetRemaining | undefined, BudgetExceeded>
    /** A budget with its period's spending (a user budget's: `userId`'s). */
    readonly get: (kind: BudgetKind, subject: string, userId?: string) => Effect.Effect<BudgetState | undefined>
    /** A budget's limit (a user budget's, which has no one spending). */
    readonly limitOf: (kind: BudgetKind, subject: string) => Effect.Effect<BudgetLimit | undefined>
    readonly set: (budget: Budget) => Effect.Effect<BudgetState>
    readonly remove: (kind: BudgetKind, subject: string) => Effect.Effect<Option.Option<Budget>>
  }
>()("gateway/budgets/Budgets") {
  static readonly layer = Layer.effect(
    Budgets,
    Effect.gen(function* () {
      const repo = yield* BudgetsRepo
      const prices = yield* ModelPrices
      const recorder = yield* UsageRecorder
      let index = new Map<string, Budget>()
      let version = ""
      const reload = Effect.gen(function* () {
        const current = yield* repo.version
        index = new Map((yield* repo.all).map((budget) => [indexKey(budget.kind, budget.subject), budget]))
        version = current
      })
      yield* reload
      // A cheap check each second, a read of the budgets when they changed.
      yield* followVersion({
        version: repo.version,
        reload,
        current: () => version,
        every: RELOAD_EVERY,
        failure: "could not read the budgets again"
      })
      // Budgets found spent (by their key and limit), until their period ends: a refused client retrying
      // costs no database read, and a budget raised meanwhile is read again.
      const spentUntil = new Map<string, { readonly limit: BudgetLimit; readonly until: number }>()
      const knownSpent = (budget: Budget, now: number) => {
        const known = spentUntil.get(indexKey(budget.kind, budget.subject))
        const same =
          known !== undefined &&
          known.limit.tokens === budget.limit.tokens &&
          known.limit.cost === budget.limit.cost &&
          known.limit.period === budget.limit.period
        return same && now < known.until ? known.until : undefined
      }

      const spenderOf = (budget: Budget, spending: Spending, since: string): Spender =>
        budget.kind === "key"
          ? { kind: "key", keyId: budget.subject, since }
          : budget.kind === "namespace"
            ? { kind: "namespace", namespace: budget.subject, since }
            : { kind: "user", namespace: budget.subject, userId: spending.userId ?? "", since }

      const concerns = (budget: Budget, spending: Spending, row: UsageEventRow) =>
        budget.kind === "key"
          ? row.keyId === budget.subject
          : budget.kind === "namespace"
            ? row.namespace === budget.subject
            : row.namespace === budget.subject && row.userId === spending.userId

      /** The budgets' spending this period: the day sums, with this replica's unwritten usage on top. */
      const spentOn = Effect.fnUntraced(function* (budgets: ReadonlyArray<Budget>, spending: Spending, now: number) {
        // Taken before the database is read; what was written by the time it is read is counted from there.
        const unwritten = yield* recorder.unwritten
        const periods = budgets.map((budget) => periodAt(budget.limit.period, now))
        const { spent: rows, written } = yield* repo.spent(
          budgets.map((budget, i) => spenderOf(budget, spending, periods[i]!.since)),
          unwritten.map((row) => row.id)
        )
        const inDatabase = new Set(written)
        return budgets.map((budget, i) => {
          const since = periods[i]!.since
          const mine: Array<Pick<SpentRow, "model" | "input" | "cachedInput" | "cacheWrite" | "output">> = rows.filter(
            (row) => row.spender === i
          )
          for (const row of unwritten)
            if (!inDatabase.has(row.id) && row.at.slice(0, 10) >= since && concerns(budget, spending, row))
              mine.push(row)
          const spent =
            budget.limit.tokens === undefined
              ? mine.reduce((sum, row) => sum + (prices.cost(row.model, row) ?? 0), 0)
              : mine.reduce((sum, row) => sum + tokensOf(row), 0)
          return { budget, spent, resetsAt: periods[i]!.resetsAt }
        })
      })

      const limitOf = (limit: BudgetLimit) => limit.tokens ?? limit.cost ?? 0

      const stateOf = (budget: Budget, spent: number, resetsAt: number): BudgetState => ({
        ...budget.limit,
        spent,
        remaining: Math.max(0, limitOf(budget.limit) - spent),
        resetsAt: DateTime.makeUnsafe(resetsAt)
      })

      const checkApplying = Effect.fn("Budgets.check")(function* (spending: Spending, applying: ReadonlyArray<Budget>) {
        const now = yield* Clock.currentTimeMillis
        const exceeded = (budget: Budget, spent: number, resetsAt: number) =>
          new BudgetExceeded({
            kind: budget.kind,
            unit: budget.limit.tokens === undefined ? "cost" : "tokens",
            limit: limitOf(budget.limit),
            spent,
            period: budget.limit.period,
            resetsAt,
            now
          })
        // A user's budget is per user: what was found spent is one user's only.
        for (const budget of applying) {
          const until = budget.kind === "user" ? undefined : knownSpent(budget, now)
          if (until !== undefined) return yield* exceeded(budget, limitOf(budget.limit), until)
        }
        const found = yield* withDeadline(spentOn(applying, spending, now), CHECK_DEADLINE_MS).pipe(
          Effect.map(Option.some),
          Effect.catchCause((cause) =>
            Effect.as(Effect.logWarning("budget check failed; the request goes on without it", cause), Option.none())
          )
        )
        if (Option.isNone(found)) return undefined
        const remaining: { tokens?: number; cost?: number } = {}
        for (const { budget, spent, resetsAt } of found.value) {
          const limit = limitOf(budget.limit)
          if (spent >= limit) {
            if (budget.kind !== "user")
              spentUntil.set(indexKey(budget.kind, budget.subject), { limit: budget.limit, until: resetsAt })
            return yield* exceeded(budget, spent, resetsAt)
          }
          const unit = budget.limit.tokens === undefined ? "cost" : "tokens"
          remaining[unit] = Math.min(remaining[unit] ?? Number.POSITIVE_INFINITY, limit - spent)
        }
        return remaining
      })

      const get = Effect.fn("Budgets.get")(function* (kind: BudgetKind, subject: string, userId?: string) {
        const budget = index.get(indexKey(kind, subject))
        if (budget === undefined) return undefined
        const now = yield* Clock.currentTimeMillis
        const [state] = yield* spentOn([budget], { namespace: budget.namespace, keyId: undefined, userId }, now)
        return stateOf(budget, state!.spent, state!.resetsAt)
      })

      const set = Effect.fn("Budgets.set")(function* (budget: Budget) {
        yield* repo.put(budget)
        yield* reload
        return (yield* get(budget.kind, budget.subject))!
      })

      const remove = Effect.fn("Budgets.remove")(function* (kind: BudgetKind, subject: string) {
        const removed = yield* repo.remove(kind, subject)
        yield* reload
        return removed
      })

      // A request under no budget (most) costs a few map lookups: no span, no database.
      const check = (spending: Spending) => {
        if (index.size === 0) return Effect.undefined
        const applying = [
          spending.keyId === undefined ? undefined : index.get(indexKey("key", spending.keyId)),
          index.get(indexKey("namespace", spending.namespace)),
          spending.userId === undefined ? undefined : index.get(indexKey("user", spending.namespace))
        ].filter((budget) => budget !== undefined)
        return applying.length === 0 ? Effect.undefined : checkApplying(spending, applying)
      }

      return Budgets.of({
        check,
        get,
        limitOf: (kind, subject) => Effect.sync(() => index.get(indexKey(kind, subject))?.limit),
        set,
        remove
      })
    })
  ).pipe(Layer.provide([BudgetsRepo.layer, ModelPrices.layer]))
}
