import type { UsageRow } from "../../api.ts"
import { LineChart, type Point } from "../../components/LineChart.tsx"
import { cost, count, share } from "../../format.ts"
import { DAY_MS, dayOf, startOf, totalOf } from "./report.ts"

/** A day on the chart's axis and in its readings: "Mar 4" (UTC, as the report sums them). */
const dayLabel = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", timeZone: "UTC" })
const sayDay = (at: number) => dayLabel.format(new Date(at))

/** About six ticks, a whole number of days apart, ending on the last day. */
const dayTicks = (start: number, end: number) => {
  const days = Math.round((end - start) / DAY_MS)
  const step = Math.max(1, Math.ceil(days / 6))
  const ticks: Array<number> = []
  for (let at = end; at >= start; at -= step * DAY_MS) ticks.unshift(at)
  return ticks
}

/** The period's totals in figures: requests, tokens in and out, the cached share of input, memory work, cost. */
export const UsageTotals = ({ rows }: { readonly rows: ReadonlyArray<UsageRow> }) => {
  const total = totalOf(rows)
  const figures: ReadonlyArray<readonly [string, string, string]> = [
    ["requests", "Requests", count(total.requests)],
    ["input", "Input tokens", count(total.inputTokens)],
    ["cached", "Cached share of input", share(total.cachedInputTokens, total.inputTokens)],
    ["output", "Output tokens", count(total.outputTokens)],
    ["injected", "Injected memory tokens", count(total.injectedTokens)],
    ["memory-work", "Memory work tokens", count(total.memoryWorkTokens)],
    ["cost", "Cost", cost(total.cost)]
  ]
  return (
    <dl class="counts">
      {figures.map(([name, label, value]) => (
        <div data-total={name}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  )
}

/** Tokens per day (input, output, memory work) and the cached share of each day's input. */
export const UsageCharts = (props: {
  readonly period: { readonly from: string; readonly to: string }
  readonly byDay: ReadonlyArray<UsageRow>
}) => {
  const { period, byDay } = props
  const start = startOf(period.from)
  const end = startOf(period.to)
  const rows = new Map(byDay.map((row) => [row.group, row]))
  // A day without traffic took no tokens: zero, not a gap.
  const series = (value: (row: UsageRow | undefined) => number | null): ReadonlyArray<Point> => {
    const points: Array<Point> = []
    for (let at = start; at <= end; at += DAY_MS) points.push({ at, value: value(rows.get(dayOf(at))) })
    return points
  }
  const chart = {
    end,
    windowMs: Math.max(DAY_MS, end - start),
    ticks: dayTicks,
    tickLabel: sayDay,
    readingLabel: sayDay,
    unit: "tokens",
    digits: 0
  }
  return (
    <div class="metrics">
      <LineChart {...chart} label="Input tokens per day" points={series((row) => row?.inputTokens ?? 0)} />
      <LineChart {...chart} label="Output tokens per day" points={series((row) => row?.outputTokens ?? 0)} />
      <LineChart {...chart} label="Memory work tokens per day" points={series((row) => row?.memoryWorkTokens ?? 0)} />
      <LineChart
        {...chart}
        label="Cached share of input per day"
        unit="%"
        points={series((row) =>
          row === undefined || row.inputTokens === 0 ? null : (row.cachedInputTokens / row.inputTokens) * 100
        )}
      />
    </div>
  )
}
