import { Effect, Metric } from "effect"
import { AuthFailure } from "../auth/ServiceAuth.ts"
import { requestsWithoutMemory } from "../db/DatabaseHealth.ts"
import { DEFAULT_NAMESPACE } from "../domain/Namespace.ts"
import { ExtractionConfig } from "../extraction/ExtractionConfig.ts"
import {
  authRejections,
  backgroundJobs,
  contextCacheLookups,
  embeddingQueryTime,
  extractionJobsDeferred,
  httpRequestDuration,
  httpRequests,
  memoryRetrievals,
  overheadTime,
  rateLimited,
  retentionRemoved,
  stageTime,
  streamFirstChunkTime,
  upstreamAttempts,
  upstreamResponseTime,
  upstreamRetries
} from "../observability/metrics.ts"
import { REQUEST_STAGES } from "../observability/requestSpan.ts"
import { tokenCounters } from "../pipeline/tokenMetrics.ts"
import { providerNames } from "../providers/providers.ts"
import { RateLimitScope } from "../ratelimit/RateLimitExceeded.ts"
import { REMOVED_KINDS } from "../retention/removedCounts.ts"
import { RETRIEVAL_MODES, SEMANTIC_STATUSES } from "../retrieval/Retrieval.ts"
import { ATTEMPT_OUTCOMES } from "../routing/attemptFailure.ts"
import { TurnNotRecorded, turnsLost, turnsWaiting } from "../turns/TurnsRepo.ts"
import { usageLost, usageSeriesAtZero } from "../usage/UsageRecorder.ts"
import { METRICS_PATH } from "./metricsPath.ts"

const LINES = ["extract", "embed", "webhook"] as const
const OUTCOMES = ["succeeded", "retried", "failed", "lease_lost"] as const

/**
 * Every documented counter, with each of its label values, at 0: a counter that appears only at its
 * first event cannot be alerted on (`rate(x[5m]) > 0` sees nothing before), nor told apart from a
 * metric that was renamed. (`gateway_http_requests_total` is the exception: its routes and statuses
 * come with the traffic, but for the first scrape's: `seriesBeforeTraffic`.)
 */
export const countersAtZero = Effect.forEach(
  [
    requestsWithoutMemory,
    extractionJobsDeferred,
    ...TurnNotRecorded.fields.reason.literals.map((reason) => Metric.withAttributes(turnsLost, { reason })),
    ...RateLimitScope.literals.map((scope) => Metric.withAttributes(rateLimited, { scope })),
    ...AuthFailure.fields.code.literals.map((code) => Metric.withAttributes(authRejections, { code })),
    ...LINES.flatMap((line) => OUTCOMES.map((outcome) => Metric.withAttributes(backgroundJobs, { line, outcome }))),
    ...["hit", "miss"].map((result) => Metric.withAttributes(contextCacheLookups, { result })),
    ...RETRIEVAL_MODES.flatMap((mode) =>
      SEMANTIC_STATUSES.map((semantic) => Metric.withAttributes(memoryRetrievals, { mode, semantic }))
    ),
    ...tokenCounters,
    // A direct request's attempts (a routed target's are set when its routes file is read).
    ...providerNames.flatMap((target) => [
      Metric.withAttributes(upstreamRetries, { route: "direct", target }),
      ...ATTEMPT_OUTCOMES.map((outcome) =>
        Metric.withAttributes(upstreamAttempts, { route: "direct", target, outcome })
      )
    ]),
    usageLost,
    ...REMOVED_KINDS.map((kind) => Metric.withAttributes(retentionRemoved, { kind }))
  ],
  (counter) => Metric.update(counter, 0),
  { discard: true }
)

/**
 * Every histogram with labels known up front (stages, providers), each with its buckets at 0, and the
 * gauges that are only set at their first event, at 0: a panel on them shows data from the first scrape,
 * not "No data" until the first completion. Reading a series registers it without changing it.
 */
export const seriesBeforeTraffic = Effect.gen(function* () {
  // The answer to Prometheus' first scrape is counted once it is sent: its series exist before it, at 0.
  const firstScrape = { route: METRICS_PATH, method: "GET", status: "200" }
  yield* Metric.update(Metric.withAttributes(httpRequests, firstScrape), 0)
  yield* Effect.forEach(
    [
      overheadTime,
      streamFirstChunkTime,
      embeddingQueryTime,
      ...REQUEST_STAGES.map((stage) => Metric.withAttributes(stageTime, { stage })),
      ...providerNames.map((provider) => Metric.withAttributes(upstreamResponseTime, { provider })),
      Metric.withAttributes(httpRequestDuration, firstScrape),
      turnsWaiting
    ],
    (metric: Metric.Metric<number, unknown>) => Metric.value(metric),
    { discard: true }
  )
  // The memory work's usage in the default namespace, with the extraction model (it comes with the first
  // extraction): a namespace and model the app's traffic gives are not known before it.
  yield* usageSeriesAtZero({
    namespace: DEFAULT_NAMESPACE,
    model: (yield* ExtractionConfig).model,
    work: "extraction"
  })
})
