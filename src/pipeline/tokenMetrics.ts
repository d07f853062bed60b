import { Effect } from "effect"
import type { ProxiedApi } from "../apis/ChatRequest.ts"
import { type TokenUsage, uncachedInput } from "../domain/TokenUsage.ts"
import {
  labelled,
  upstreamCacheWriteTokens,
  upstreamInputTokens,
  upstreamOutputTokens
} from "../observability/metrics.ts"
import type { ProviderName } from "../providers/ProviderName.ts"

/** Whose figures: the provider, and the API it was called by (a request translated for Anthropic: `messages`). */
export type TokenLabels = { readonly provider: ProviderName; readonly api: ProxiedApi }

/**
 * The provider and API pairs the memory routes call: OpenAI by the client's own API, Anthropic by
 * Messages (whatever the client's), each of whose series is there at 0 from the start.
 */
const CALLED: ReadonlyArray<TokenLabels> = [
  { provider: "openai", api: "chat.completions" },
  { provider: "openai", api: "responses" },
  { provider: "anthropic", api: "messages" }
]

const inputOf = labelled(upstreamInputTokens)
const cacheWriteOf = labelled(upstreamCacheWriteTokens)
const outputOf = labelled(upstreamOutputTokens)

/**
 * Counts one answer's usage: its input split by whether the provider's cache served it, its cache
 * writes, its output. One step for the four series (this runs on every answer).
 */
export const countTokens = (labels: TokenLabels, usage: TokenUsage): Effect.Effect<void> =>
  Effect.contextWith((context) => {
    // A figure of 0 changes no counter (their series are there from the start: `tokenCounters`).
    if (usage.cachedInput > 0) inputOf({ ...labels, cached: "true" }).updateUnsafe(usage.cachedInput, context)
    const uncached = uncachedInput(usage)
    if (uncached > 0) inputOf({ ...labels, cached: "false" }).updateUnsafe(uncached, context)
    if (usage.cacheWrite > 0) cacheWriteOf(labels).updateUnsafe(usage.cacheWrite, context)
    if (usage.output > 0) outputOf(labels).updateUnsafe(usage.output, context)
    return Effect.void
  })

/** The token counters' series, for `countersAtZero`. */
export const tokenCounters = CALLED.flatMap((labels) => [
  inputOf({ ...labels, cached: "true" }),
  inputOf({ ...labels, cached: "false" }),
  cacheWriteOf(labels),
  outputOf(labels)
])
