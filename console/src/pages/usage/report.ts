import { type ApiKey, request, type UsageGrouping, type UsageReport, type UsageRow } from "../../api.ts"

export const DAY_MS = 86_400_000

/** A UTC day as the API writes it (`YYYY-MM-DD`), and back to its first millisecond. */
export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10)
export const startOf = (day: string): number => Date.parse(`${day}T00:00:00Z`)

/** What the usage page shows for a period: the reports it draws, and the keys, to name the keys' rows. */
export interface UsageData {
  /** The period asked: the last `days` days, today (UTC) included. */
  readonly days: number
  readonly period: UsageReport["period"]
  readonly byDay: ReadonlyArray<UsageRow>
  readonly byWork: ReadonlyArray<UsageRow>
  readonly byKey: ReadonlyArray<UsageRow>
  readonly byUser: ReadonlyArray<UsageRow>
  readonly byModel: ReadonlyArray<UsageRow>
  readonly keys: ReadonlyMap<string, ApiKey>
}

/** The reports of the last `days` days (UTC, today included), in the namespace chosen in the header. */
export const loadUsage = async (days: number, now = Date.now()): Promise<UsageData> => {
  const today = Math.floor(now / DAY_MS) * DAY_MS
  const from = dayOf(today - (days - 1) * DAY_MS)
  const to = dayOf(today)
  const report = (groupBy: UsageGrouping) =>
    request<UsageReport>("GET", `/api/usage?groupBy=${groupBy}&from=${from}&to=${to}`)
  const [byDay, byWork, byKey, byUser, byModel, keys] = await Promise.all([
    report("day"),
    report("work"),
    report("key"),
    report("user"),
    report("model"),
    // Only to name the keys' rows: without the list they are named by their ids.
    request<{ keys: ReadonlyArray<ApiKey> }>("GET", "/api/keys").then(
      (listed) => listed.keys,
      () => []
    )
  ])
  return {
    days,
    period: byDay.period,
    byDay: byDay.usage,
    byWork: byWork.usage,
    byKey: byKey.usage,
    byUser: byUser.usage,
    byModel: byModel.usage,
    keys: new Map(keys.map((key) => [key.id, key]))
  }
}

/** The rows summed into one (its cost `null` when any row's is). */
export const totalOf = (rows: ReadonlyArray<UsageRow>): UsageRow =>
  rows.reduce<UsageRow>(
    (sum, row) => ({
      group: null,
      requests: sum.requests + row.requests,
      unreportedRequests: sum.unreportedRequests + row.unreportedRequests,
      inputTokens: sum.inputTokens + row.inputTokens,
      cachedInputTokens: sum.cachedInputTokens + row.cachedInputTokens,
      cacheWriteTokens: sum.cacheWriteTokens + row.cacheWriteTokens,
      outputTokens: sum.outputTokens + row.outputTokens,
      reasoningTokens: sum.reasoningTokens + row.reasoningTokens,
      injectedTokens: sum.injectedTokens + row.injectedTokens,
      memoryWorkTokens: sum.memoryWorkTokens + row.memoryWorkTokens,
      memoryWorkCalls: sum.memoryWorkCalls + row.memoryWorkCalls,
      cost: sum.cost === null || row.cost === null ? null : sum.cost + row.cost,
      lastAt: sum.lastAt === null || (row.lastAt !== null && row.lastAt > sum.lastAt) ? row.lastAt : sum.lastAt
    }),
    {
      group: null,
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
    }
  )
