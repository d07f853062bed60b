import { Clock, Context, Effect, Layer, Schema } from "effect"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"
import { ModelPrices } from "./ModelPrices.ts"
import { type GroupSums, type UsageFilter, UsageRepo } from "./UsageRepo.ts"
import type { KeyUsage, UsageGrouping, UsagePeriod, UsageRow } from "./UsageReport.ts"

/** The longest period one report covers. */
const MAX_DAYS = 3660
/** The period when none is asked: the last 30 days, today included. */
const DEFAULT_DAYS = 30
const DAY_MS = 86_400_000
const ISO_DAY = /^\d{4}-\d{2}-\d{2}$/

/** `from`/`to` are not days, or not in order. */
export class InvalidUsagePeriod
  extends Schema.TaggedError<InvalidUsagePeriod>()("InvalidUsagePeriod", {
    message: Schema.String,
    param: Schema.String
  })
  implements ClientFacing
{
  get clientError() {
    return clientError(400, "invalid_usage_period", this.message, { param: this.param })
  }
}

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)

const parseDay = (value: string, param: string) => {
  const ms = Date.parse(`${value}T00:00:00Z`)
  return ISO_DAY.test(value) && Number.isFinite(ms) && dayOf(ms) === value
    ? Effect.succeed(ms)
    : Effect.fail(new InvalidUsagePeriod({ message: `'${param}' must be a day, YYYY-MM-DD (UTC)`, param }))
}

const emptyRow = (group: string | null): UsageRow => ({
  group,
  requests: 0,
  unreportedRequests: 0,
  inputTokens: 0,
  cachedInputTokens: 0,
  cacheWriteTokens: 0,
  outputTokens: 0,
  reasoningTokens: 0,
  injectedTokens: 0,
  memoryWorkTokens: 0,
  memoryWorkCalls: 0,
  cost: 0,
  lastAt: null
})

/**
 * Usage reports: the days' sums of a period grouped as asked, priced where `MODEL_PRICES` knows the
 * model. Scoped like every `/api` read: the caller's namespace, or every namespace for the global admin.
 */
export class Usage extends Context.Service<
  Usage,
  {
    readonly report: (
      grouping: UsageGrouping,
      asked: { readonly from?: string | undefined; readonly to?: string | undefined },
      filter: UsageFilter
    ) => Effect.Effect<{ readonly period: UsagePeriod; readonly usage: ReadonlyArray<UsageRow> }, InvalidUsagePeriod>
    /** Each key's usage this period (`periods`: the key's budget's; else the month). */
    readonly ofKeys: (
      keyIds: ReadonlyArray<string>,
      periods: ReadonlyMap<string, "day" | "month">
    ) => Effect.Effect<ReadonlyMap<string, KeyUsage>>
  }
>()("gateway/usage/Usage") {
  static readonly layer = Layer.effect(
    Usage,
    Effect.gen(function* () {
      const repo = yield* UsageRepo
      const prices = yield* ModelPrices

      const add = (row: UsageRow, sums: GroupSums): UsageRow => {
        const cost = prices.cost(sums.model, sums)
        const lastAt =
          row.lastAt === null || sums.lastAt.epochMilliseconds > row.lastAt.epochMilliseconds ? sums.lastAt : row.lastAt
        const common = { cost: row.cost === null || cost === undefined ? null : row.cost + cost, lastAt }
        if (sums.work !== "app") {
          return {
            ...row,
            ...common,
            memoryWorkTokens: row.memoryWorkTokens + sums.input + sums.output,
            memoryWorkCalls: row.memoryWorkCalls + sums.requests
          }
        }
        return {
          ...row,
          ...common,
          requests: row.requests + sums.requests,
          unreportedRequests: row.unreportedRequests + sums.unreported,
          inputTokens: row.inputTokens + sums.input,
          cachedInputTokens: row.cachedInputTokens + sums.cachedInput,
          cacheWriteTokens: row.cacheWriteTokens + sums.cacheWrite,
          outputTokens: row.outputTokens + sums.output,
          reasoningTokens: row.reasoningTokens + sums.reasoning,
          injectedTokens: row.injectedTokens + sums.injected
        }
      }

      const report = Effect.fn("Usage.report")(function* (
        grouping: UsageGrouping,
        asked: { readonly from?: string | undefined; readonly to?: string | undefined },
        filter: UsageFilter
      ) {
        const today = Math.floor((yield* Clock.currentTimeMillis) / DAY_MS) * DAY_MS
        const to = asked.to === undefined ? today : yield* parseDay(asked.to, "to")
        const from = asked.from === undefined ? to - (DEFAULT_DAYS - 1) * DAY_MS : yield* parseDay(asked.from, "from")
        if (from > to) return yield* new InvalidUsagePeriod({ message: "'from' is after 'to'", param: "from" })
        if ((to - from) / DAY_MS >= MAX_DAYS) {
          return yield* new InvalidUsagePeriod({ message: `A report covers at most ${MAX_DAYS} days`, param: "from" })
        }
        const period = { from: dayOf(from), to: dayOf(to) }
        const groups = new Map<string, UsageRow>()
        for (const sums of yield* repo.report(grouping, period, filter)) {
          groups.set(sums.group, add(groups.get(sums.group) ?? emptyRow(sums.group === "" ? null : sums.group), sums))
        }
        const usage = [...groups.values()]
        if (grouping === "day") usage.sort((a, b) => (a.group ?? "").localeCompare(b.group ?? ""))
        else {
          const total = (row: UsageRow) => row.inputTokens + row.outputTokens + row.memoryWorkTokens
          usage.sort((a, b) => total(b) - total(a) || (a.group ?? "").localeCompare(b.group ?? ""))
        }
        return { period, usage }
      })

      const ofKeys = Effect.fn("Usage.ofKeys")(function* (
        keyIds: ReadonlyArray<string>,
        periods: ReadonlyMap<string, "day" | "month">
      ) {
        if (keyIds.length === 0) return new Map<string, KeyUsage>()
        const now = yield* Clock.currentTimeMillis
        const today = dayOf(now)
        const monthStart = `${today.slice(0, 8)}01`
        const { sums, lastUsed } = yield* repo.ofKeys(keyIds, monthStart, today)
        const last = new Map(lastUsed.map((row) => [row.keyId, row.lastAt]))
        return new Map(
          keyIds.map((keyId) => {
            const period = periods.get(keyId) ?? "month"
            const rows = sums.filter((row) => row.keyId === keyId && (period === "month" || row.today))
            const costs = rows.map((row) => prices.cost(row.model, row))
            const usage: KeyUsage = {
              period,
              since: period === "day" ? today : monthStart,
              requests: rows.reduce((sum, row) => sum + (row.app ? row.requests : 0), 0),
              tokens: rows.reduce((sum, row) => sum + row.input + row.output, 0),
              cost: costs.some((cost) => cost === undefined)
                ? null
                : costs.reduce((sum: number, cost) => sum + cost!, 0),
              lastUsedAt: last.get(keyId) ?? null
            }
            return [keyId, usage] as const
          })
        )
      })

      return Usage.of({ report, ofKeys })
    })
  ).pipe(Layer.provide([UsageRepo.layer, ModelPrices.layer]))
}
