import { Metric } from "effect"

/** Latency buckets in seconds, from a sub-millisecond cache hit to a minute-long completion. */
const SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]

export const httpRequests = Metric.counter("gateway_http_requests_total", {
  description: "HTTP requests answered, by route, method and status",
  incremental: true
})

export const httpRequestDuration = Metric.histogram("gateway_http_request_duration_seconds", {
  description: "Time until the response head was ready (for a stream: until it starts), by route, method and status",
  boundaries: SECONDS
})

export const httpRequestsInFlight = Metric.gauge("gateway_http_requests_in_flight", {
  description: "Requests being handled, until their response head is ready"
})

export const upstreamResponseTime = Metric.histogram("gateway_upstream_response_seconds", {
  description: "Completions: time from sending the request upstream to the provider's response head, by provider",
  boundaries: SECONDS
})

export const streamFirstChunkTime = Metric.histogram("gateway_stream_first_chunk_seconds", {
  description: "Streaming completions: time from the start of the pipeline to the first chunk relayed to the client",
  boundaries: SECONDS
})

export const overheadTime = Metric.histogram("gateway_overhead_seconds", {
  description: "Completions: time spent in the gateway itself, as reported in X-Service-Overhead-Ms",
  boundaries: SECONDS
})

export const stageTime = Metric.histogram("gateway_stage_seconds", {
  description:
    "Completions: time in each stage of the pipeline (pipeline.resolveUser, pipeline.loadProfile, pipeline.inject, " +
    "pipeline.forward — which includes the provider call —, pipeline.record) and in the provider call " +
    "(Upstream.chat, until its response head), by stage",
  boundaries: SECONDS
})

export const upstreamInputTokens = Metric.counter("gateway_upstream_input_tokens_total", {
  description:
    "Input tokens the provider counted in the answers relayed on the memory routes, by provider, the API it was " +
    "called by (chat.completions, responses, messages) and cached (true: read from the provider's prompt cache; " +
    "false: the rest, cache writes included)",
  incremental: true
})

export const upstreamCacheWriteTokens = Metric.counter("gateway_upstream_cache_write_tokens_total", {
  description:
    "Input tokens the provider wrote to its prompt cache (Anthropic's cache_creation_input_tokens; counted as " +
    'cached="false" input too), by provider and API',
  incremental: true
})

export const upstreamOutputTokens = Metric.counter("gateway_upstream_output_tokens_total", {
  description: "Output tokens the provider counted in the answers relayed on the memory routes, by provider and API",
  incremental: true
})

export const contextCacheLookups = Metric.counter("gateway_context_cache_lookups_total", {
  description: "Profile context cache lookups by result (hit, miss)",
  incremental: true
})

/**
 * The series of `metric` for one set of labels, made once: each distinct set is its own series,
 * so labels must come from small, bounded sets (route templates, status codes — never ids).
 */
export const labelled = <Input, State>(metric: Metric.Metric<Input, State>) => {
  const series = new Map<string, Metric.Metric<Input, State>>()
  return (labels: Metric.Metric.AttributeSet): Metric.Metric<Input, State> => {
    const key = Object.values(labels).join("\u0000")
    let found = series.get(key)
    if (found === undefined) {
      found = Metric.withAttributes(metric, labels)
      series.set(key, found)
    }
    return found
  }
}

export const memoryRetrievals = Metric.counter("gateway_memory_retrievals_total", {
  description:
    "Memory rankings for injection, by mode (all: few enough to inject all; fused; keyword) and " +
    "semantic status (used, off, no_vectors, timeout, failed)",
  incremental: true
})

export const embeddingQueryTime = Metric.histogram("gateway_embedding_query_seconds", {
  description: "Time to embed a request's query (cache misses only; timed-out ones included at their budget)",
  boundaries: SECONDS
})

export const embeddingThreads = Metric.gauge("gateway_embedding_threads", {
  description:
    "Threads running the local embedding model: none until the first text is embedded (a memory, or a query " +
    "for a profile whose memories have vectors), then EMBEDDING_THREADS"
})

export const rateLimited = Metric.counter("gateway_rate_limited_total", {
  description:
    "Requests refused with 429 by the gateway's own limits, by scope (user, key, client, auth: too many wrong keys)",
  incremental: true
})

export const authRejections = Metric.counter("gateway_auth_rejections_total", {
  description: "Requests refused for their API key, by code (missing_api_key, invalid_api_key, insufficient_scope)",
  incremental: true
})

export const extractionJobsDeferred = Metric.counter("gateway_extraction_jobs_deferred_total", {
  description: "Extraction jobs put back in the queue because their profile's hourly budget was spent",
  incremental: true
})

export const backgroundJobs = Metric.counter("gateway_background_jobs_total", {
  description:
    "Attempts of queued jobs this process made, by line (extract, embed, webhook) and outcome (succeeded, " +
    "retried, failed: for good, lease_lost)",
  incremental: true
})

export const upstreamAttempts = Metric.counter("gateway_upstream_attempts_total", {
  description:
    "Attempts at a provider on the memory routes, by route (the routed model, or direct), target (provider/model " +
    "of a routed target, the provider of a direct request) and outcome (answered, server_error, rate_limited, " +
    "unreachable, timeout, refused, unsupported)",
  incremental: true
})

export const upstreamRetries = Metric.counter("gateway_upstream_retries_total", {
  description: "Attempts made again at the same target before any byte of the answer, by route and target",
  incremental: true
})

export const routeFallbacks = Metric.counter("gateway_route_fallbacks_total", {
  description:
    "Requests a routed target gave up on (failed, or its breaker open) for the next one, by route and target",
  incremental: true
})

export const routeBreakerOpen = Metric.gauge("gateway_route_breaker_open", {
  description: "A routed target's circuit breaker on this replica: 0 closed, 1 open, 0.5 half-open, by route and target"
})

export const retentionRemoved = Metric.counter("gateway_retention_removed_total", {
  description:
    "What the retention sweep removed, by kind (memories: expired; turns: recorded turns past their namespace's " +
    "turnsDays; responses: the Responses state stored with them, responses and conversation items)",
  incremental: true
})
