import { Schema } from "effect"

/** What a usage report groups its rows by. */
export const UsageGrouping = Schema.Literals(["key", "user", "model", "namespace", "day", "work"])
export type UsageGrouping = typeof UsageGrouping.Type

/**
 * One group's usage over the period asked. The token figures are the app's own requests as the
 * provider counted them (`inputTokens` includes `cachedInputTokens`); `memoryWorkTokens` is what the
 * gateway's own calls for the same group took (input and output: extraction, cues, thread
 * summaries, embeddings through a provider).
 */
export const UsageRow = Schema.Struct({
  /** The key's id (`key`; `null`: the environment's keys and memory work), the user id (`user`; `null`: none), the model, the namespace, the day (`YYYY-MM-DD`, UTC), or the work (`app`, `extraction`, …). */
  group: Schema.NullOr(Schema.String),
  /** The app's requests answered (memory work's calls are not requests). */
  requests: Schema.Int,
  /** Of `requests`, those whose answer carried no usage (a stream cut before its end, a provider that does not say). */
  unreportedRequests: Schema.Int,
  inputTokens: Schema.Int,
  cachedInputTokens: Schema.Int,
  /** Of `inputTokens`, written to the provider's prompt cache (Anthropic's cache writes). */
  cacheWriteTokens: Schema.Int,
  outputTokens: Schema.Int,
  /** Of `outputTokens`, spent reasoning (where the provider says). */
  reasoningTokens: Schema.Int,
  /** Memory the gateway injected into the requests, in estimated tokens (part of `inputTokens`). */
  injectedTokens: Schema.Int,
  memoryWorkTokens: Schema.Int,
  /** The memory work's calls to a provider. */
  memoryWorkCalls: Schema.Int,
  /** What all of it cost (the memory work's included) at the prices of `MODEL_PRICES`; `null` when a model in it has no price. */
  cost: Schema.NullOr(Schema.Finite),
  lastAt: Schema.NullOr(Schema.DateTimeUtcFromDate)
})
export type UsageRow = typeof UsageRow.Type

/** The days a report covers, both included (UTC). */
export interface UsagePeriod {
  readonly from: string
  readonly to: string
}

/** A key's usage this period (its budget's, else the month): what `GET /api/keys` shows with each key. */
export const KeyUsage = Schema.Struct({
  period: Schema.Literals(["day", "month"]),
  /** The period's first day (UTC). */
  since: Schema.String,
  /** The app's requests made with the key. */
  requests: Schema.Int,
  /** Input and output tokens, the memory work done with the key's provider key included. */
  tokens: Schema.Int,
  cost: Schema.NullOr(Schema.Finite),
  /** The key's last answered request or memory work, ever. */
  lastUsedAt: Schema.NullOr(Schema.DateTimeUtc)
})
export type KeyUsage = typeof KeyUsage.Type
