import { clock, clockSeconds } from "../format.ts"

/** A reading of a chart's series: when, and the value (null: nothing to measure then, e.g. no traffic). */
export interface Point {
  readonly at: number
  readonly value: number | null
}

const WIDTH = 320
const HEIGHT = 150
const LEFT = 40
const RIGHT = 10
const TOP = 18
const BOTTOM = 24
const PLOT_W = WIDTH - LEFT - RIGHT
const PLOT_H = HEIGHT - TOP - BOTTOM
const MINUTE = 60_000

/** The smallest 1, 2 or 5 × 10ⁿ at or above `max`, so the axis reads in round numbers. */
const niceMax = (max: number) => {
  if (max <= 0) return 1
  const power = 10 ** Math.floor(Math.log10(max))
  return ([1, 2, 5, 10].find((step) => step * power >= max) ?? 10) * power
}

/** The whole minutes within [start, end], for the time axis' ticks. */
const minuteTicks = (start: number, end: number) => {
  const ticks: Array<number> = []
  for (let at = Math.ceil(start / MINUTE) * MINUTE; at <= end; at += MINUTE) ticks.push(at)
  return ticks
}

const trim = (n: number) => String(Number(n.toPrecision(3)))

/**
 * A line chart of a metric over a fixed window of time: a y axis in the metric's unit, an x axis of
 * clock times (a tick per minute) or of the ticks given (days), the latest value written large. Screen
 * readers get the same in words (the picture's label) and every reading in a visually hidden table.
 */
export const LineChart = (props: {
  readonly label: string
  /** What the y axis counts in, after `scale`: "req/s", "ms", "%", "s". */
  readonly unit: string
  /** Multiplies each value for display (seconds to milliseconds: 1000). */
  readonly scale?: number
  readonly digits: number
  readonly points: ReadonlyArray<Point>
  /** The window's end (the latest reading) and length. */
  readonly end: number
  readonly windowMs: number
  /** The time axis' ticks within [start, end] (by default each whole minute) and how one is said (a clock time). */
  readonly ticks?: (start: number, end: number) => ReadonlyArray<number>
  readonly tickLabel?: (at: number) => string
  /** How a reading's time is said in the table for screen readers (by default a clock time with seconds). */
  readonly readingLabel?: (at: number) => string
}) => {
  const { label, unit, digits, points, end, windowMs } = props
  const { ticks = minuteTicks, tickLabel = clock, readingLabel = clockSeconds } = props
  const scale = props.scale ?? 1
  const start = end - windowMs
  const shown = points
    .filter((point) => point.at >= start)
    .map((point) => ({ at: point.at, value: point.value === null ? null : point.value * scale }))
  const known = shown.flatMap((point) => (point.value === null ? [] : [point.value]))
  const format = (value: number) => `${value.toFixed(digits)} ${unit}`
  const current = shown.at(-1)?.value
  const top = niceMax(Math.max(0, ...known))
  const x = (at: number) => LEFT + ((at - start) / windowMs) * PLOT_W
  const y = (value: number) => TOP + PLOT_H - (value / top) * PLOT_H
  // A gap where a reading had no value, rather than a line drawn through it.
  const runs: Array<Array<readonly [number, number]>> = [[]]
  for (const point of shown) {
    if (point.value === null) runs.push([])
    else runs.at(-1)!.push([x(point.at), y(point.value)])
  }
  const summary =
    known.length === 0
      ? `${label}: no readings yet.`
      : `${label} from ${tickLabel(shown[0]!.at)} to ${tickLabel(end)}: latest ${current == null ? "none" : format(current)}, ` +
        `lowest ${format(Math.min(...known))}, highest ${format(Math.max(...known))}.`
  return (
    <figure class="metric">
      <figcaption>{label}</figcaption>
      <strong>{current == null ? "—" : format(current)}</strong>
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={summary}>
        <g class="axis" data-axis="y">
          <text x={4} y={10}>
            {unit}
          </text>
          {[0, top / 2, top].map((tick) => (
            <g>
              <line x1={LEFT - 4} x2={LEFT + PLOT_W} y1={y(tick)} y2={y(tick)} class={tick === 0 ? "base" : "grid"} />
              <text x={LEFT - 6} y={y(tick) + 3.5} text-anchor="end">
                {trim(tick)}
              </text>
            </g>
          ))}
        </g>
        <g class="axis" data-axis="x">
          {ticks(start, end).map((tick) => (
            <g>
              <line x1={x(tick)} x2={x(tick)} y1={TOP + PLOT_H} y2={TOP + PLOT_H + 4} class="base" />
              {/* A label that would run past the right edge ends at its tick instead. */}
              <text
                x={x(tick)}
                y={HEIGHT - 6}
                text-anchor={x(tick) + tickLabel(tick).length * 3 > WIDTH ? "end" : "middle"}
              >
                {tickLabel(tick)}
              </text>
            </g>
          ))}
        </g>
        {runs.map((run) =>
          run.length === 1 ? (
            <circle cx={run[0]![0]} cy={run[0]![1]} r="2.5" class="dot" />
          ) : run.length > 1 ? (
            <polyline points={run.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join(" ")} class="line" />
          ) : null
        )}
      </svg>
      <table class="visually-hidden">
        <caption>{label}: readings</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Value ({unit})</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((point) => (
            <tr>
              <th scope="row">{readingLabel(point.at)}</th>
              <td>{point.value === null ? "no value" : format(point.value)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  )
}
