import { useEffect, useState } from "preact/hooks"
import { metricsText } from "../api.ts"
import { LineChart, type Point } from "../components/LineChart.tsx"
import { ErrorNote } from "../components/Status.tsx"
import { parseMetrics, type Reading, total } from "../metrics.ts"
import { RoutesSection } from "./overview/RoutesSection.tsx"

const EVERY_MS = 5000
const KEEP = 60

/** The rate or mean of a counter or histogram between two readings (null without traffic). */
const perSecond = (a: Reading, b: Reading, name: string) =>
  (total(b.samples, name) - total(a.samples, name)) / ((b.at - a.at) / 1000)
const meanOf = (a: Reading, b: Reading, histogram: string) => {
  const count = total(b.samples, `${histogram}_count`) - total(a.samples, `${histogram}_count`)
  return count <= 0 ? null : (total(b.samples, `${histogram}_sum`) - total(a.samples, `${histogram}_sum`)) / count
}
const hitRate = (a: Reading, b: Reading) => {
  const lookups = "gateway_context_cache_lookups_total"
  const hits = total(b.samples, lookups, { result: "hit" }) - total(a.samples, lookups, { result: "hit" })
  const all = total(b.samples, lookups) - total(a.samples, lookups)
  return all <= 0 ? null : hits / all
}

/**
 * What `/metrics` says, read every few seconds and drawn as small charts of the last five minutes; beneath,
 * the routed models and their targets.
 */
export const Overview = () => {
  const [readings, setReadings] = useState<ReadonlyArray<Reading>>([])
  const [error, setError] = useState<Error | null>(null)
  useEffect(() => {
    let stopped = false
    const read = () =>
      metricsText().then(
        (text) => {
          if (stopped) return
          setError(null)
          setReadings((all) => [...all, { at: Date.now(), samples: parseMetrics(text) }].slice(-(KEEP + 1)))
        },
        (failure: Error) => {
          if (!stopped) setError(failure)
        }
      )
    void read()
    const timer = setInterval(read, EVERY_MS)
    return () => {
      stopped = true
      clearInterval(timer)
    }
  }, [])
  // A rate or mean belongs to the later of the two readings it is computed from.
  const series = (f: (a: Reading, b: Reading) => number | null): ReadonlyArray<Point> =>
    readings.slice(1).map((reading, index) => ({ at: reading.at, value: f(readings[index]!, reading) }))
  const latest = readings.at(-1)
  const first = readings[0]
  const chart = { end: latest?.at ?? Date.now(), windowMs: KEEP * EVERY_MS }
  return (
    <main>
      <h1>Overview</h1>
      <ErrorNote error={error} />
      <p class="muted">
        The last {(KEEP * EVERY_MS) / 60_000} minutes, read from /metrics every {EVERY_MS / 1000} s
        {readings.length < 2 ? " (a rate needs two readings)…" : "."}
      </p>
      <div class="metrics">
        <LineChart
          {...chart}
          label="Requests per second"
          unit="req/s"
          digits={1}
          points={series((a, b) => perSecond(a, b, "gateway_http_requests_total"))}
        />
        <LineChart
          {...chart}
          label="Gateway overhead (mean)"
          unit="ms"
          scale={1000}
          digits={1}
          points={series((a, b) => meanOf(a, b, "gateway_overhead_seconds"))}
        />
        <LineChart
          {...chart}
          label="First chunk (mean)"
          unit="ms"
          scale={1000}
          digits={0}
          points={series((a, b) => meanOf(a, b, "gateway_stream_first_chunk_seconds"))}
        />
        <LineChart {...chart} label="Profile cache hit rate" unit="%" scale={100} digits={0} points={series(hitRate)} />
        <LineChart
          {...chart}
          label="Extraction lag"
          unit="s"
          digits={0}
          points={readings.map((reading) => ({
            at: reading.at,
            value: total(reading.samples, "gateway_extraction_lag_seconds")
          }))}
        />
      </div>
      {latest !== undefined && (
        <p class="muted">
          Pending extraction jobs: {total(latest.samples, "gateway_extraction_jobs", { status: "pending" })} · database{" "}
          {total(latest.samples, "gateway_database_available") === 1 ? "available" : "unavailable"}
        </p>
      )}
      <RoutesSection
        window={
          first === undefined || latest === undefined || first === latest ? undefined : { from: first, to: latest }
        }
        tick={latest?.at}
      />
    </main>
  )
}
