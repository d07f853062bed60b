import type { BudgetPeriod } from "./Budget.ts"

/** The current period's first day (`YYYY-MM-DD`, UTC) and when the next one starts (epoch ms). */
export const periodAt = (
  period: BudgetPeriod,
  nowMs: number
): { readonly since: string; readonly resetsAt: number } => {
  const now = new Date(nowMs)
  const year = now.getUTCFullYear()
  const month = now.getUTCMonth()
  const start = period === "day" ? Date.UTC(year, month, now.getUTCDate()) : Date.UTC(year, month, 1)
  const resetsAt = period === "day" ? Date.UTC(year, month, now.getUTCDate() + 1) : Date.UTC(year, month + 1, 1)
  return { since: new Date(start).toISOString().slice(0, 10), resetsAt }
}
