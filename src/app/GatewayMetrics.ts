import { monitorEventLoopDelay, performance } from "node:perf_hooks"
import { Context, Effect, Layer, Metric } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { JobQueue } from "../jobs/JobQueue.ts"
import { makeProcessMetrics } from "../observability/processMetrics.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { countersAtZero, seriesBeforeTraffic } from "./countersAtZero.ts"

/** The delay monitor samples every this many ms; each sample is the whole interval between two ticks. */
const DELAY_RESOLUTION_MS = 10

// One gauge per percentile (as Node's prom-client does): a `quantile` label belongs to summaries
// only, and a summary's count and sum would have to grow across scrapes while these restart at each.
const eventLoopDelays = [
  [
    50,
    Metric.gauge("gateway_event_loop_delay_p50_seconds", {
      description: "Median event loop delay since the previous scrape"
    })
  ],
  [
    99,
    Metric.gauge("gateway_event_loop_delay_p99_seconds", {
      description: "99th percentile of the event loop delay since the previous scrape"
    })
  ],
  [
    100,
    Metric.gauge("gateway_event_loop_delay_max_seconds", {
      description: "Longest event loop delay since the previous scrape"
    })
  ]
] as const

const eventLoopUtilization = Metric.gauge("gateway_event_loop_utilization", {
  description: "Share of time the event loop was busy since the previous scrape (0 to 1)"
})

const extractionJobs = Metric.gauge("gateway_extraction_jobs", {
  description: "Unfinished extraction jobs by status (pending, running), across all workers"
})
const pendingJobs = Metric.withAttributes(extractionJobs, { status: "pending" })
const runningJobs = Metric.withAttributes(extractionJobs, { status: "running" })

const extractionLag = Metric.gauge("gateway_extraction_lag_seconds", {
  description: "Age of the oldest pending extraction job: how far behind the workers are"
})

const contextCacheEntries = Metric.gauge("gateway_context_cache_entries", {
  description: "Profiles whose context is cached in this process"
})

/**
 * The Prometheus exposition (`GET /metrics`). Counters and histograms are updated where things
 * happen; gauges whose source is elsewhere (the job table, the event loop) are read at scrape time.
 */
export class GatewayMetrics extends Context.Service<
  GatewayMetrics,
  {
    readonly exposition: Effect.Effect<string>
  }
>()("gateway/observability/GatewayMetrics") {
  static readonly layer = Layer.effect(
    GatewayMetrics,
    Effect.gen(function* () {
      const queue = yield* JobQueue
      const cache = yield* SnapshotCache
      yield* countersAtZero
      yield* seriesBeforeTraffic
      const delay = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const histogram = monitorEventLoopDelay({ resolution: DELAY_RESOLUTION_MS })
          histogram.enable()
          return histogram
        }),
        (histogram) => Effect.sync(() => histogram.disable())
      )
      let utilizationSince = performance.eventLoopUtilization()
      const processReadings = yield* makeProcessMetrics

      const exposition = Effect.gen(function* () {
        const backlog = yield* queue.backlog
        yield* Metric.update(pendingJobs, backlog.pending)
        yield* Metric.update(runningJobs, backlog.running)
        yield* Metric.update(extractionLag, backlog.oldestPendingSeconds)
        yield* Metric.update(contextCacheEntries, cache.size())
        for (const [percentile, gauge] of eventLoopDelays) {
          // Samples are intervals in nanoseconds: the delay is what exceeds the resolution.
          const intervalMs = delay.count === 0 ? DELAY_RESOLUTION_MS : delay.percentile(percentile) / 1e6
          yield* Metric.update(gauge, Math.max(0, intervalMs - DELAY_RESOLUTION_MS) / 1000)
        }
        delay.reset()
        const utilization = performance.eventLoopUtilization(utilizationSince)
        utilizationSince = performance.eventLoopUtilization()
        yield* Metric.update(eventLoopUtilization, utilization.utilization)
        yield* processReadings
        return yield* PrometheusMetrics.format()
      }).pipe(Effect.withSpan("GatewayMetrics.exposition"))

      return GatewayMetrics.of({ exposition })
    })
  ).pipe(Layer.provide([SnapshotCache.layer, JobQueue.layer]))
}
