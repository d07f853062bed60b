import { Schema } from "effect"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"

/** Which limit: per user id or per app key on `/v1`, per client on `/api`, or wrong keys per client. */
export const RateLimitScope = Schema.Literals(["user", "key", "client", "auth"])
export type RateLimitScope = typeof RateLimitScope.Type

/** Where a request stands against one limit: what the `x-ratelimit-*-requests` headers report. */
export class RateLimitState extends Schema.Class<RateLimitState>("RateLimitState")({
  /** Requests per window this process allows (the configured limit divided among the replicas). */
  limit: Schema.Int,
  remaining: Schema.Int,
  /** Milliseconds until the bucket is full again. */
  resetMs: Schema.Int
}) {}

/** A duration the way OpenAI writes its reset headers: `20ms`, `1.5s`, `6m0s`, `1h0m0s`. */
export const formatReset = (ms: number): string => {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`
  const hours = Math.floor(ms / 3_600_000)
  const minutes = Math.floor((ms % 3_600_000) / 60_000)
  const seconds = Number(((ms % 60_000) / 1000).toFixed(3))
  return `${hours > 0 ? `${hours}h${minutes}m` : minutes > 0 ? `${minutes}m` : ""}${seconds}s`
}

/** OpenAI's request-limit headers, so clients and SDKs that read them work unchanged. */
export const rateLimitHeaders = (
  state: Pick<RateLimitState, "limit" | "remaining" | "resetMs">
): Record<string, string> => ({
  "x-ratelimit-limit-requests": String(state.limit),
  "x-ratelimit-remaining-requests": String(state.remaining),
  "x-ratelimit-reset-requests": formatReset(state.resetMs)
})

const limitedParty = {
  user: "this user",
  key: "this API key",
  client: "this client on the management API",
  auth: "wrong API keys from this client"
} as const

/**
 * A request refused by one of the gateway's own limits (429 `rate_limit_exceeded`): OpenAI's error
 * shape and headers, with `retry-after` (seconds) and `retry-after-ms`, which the official SDKs
 * honour when they retry.
 */
export class RateLimitExceeded
  extends Schema.TaggedError<RateLimitExceeded>()("RateLimitExceeded", {
    scope: RateLimitScope,
    limit: Schema.Int,
    remaining: Schema.Int,
    resetMs: Schema.Int,
    /** Milliseconds until one more request is allowed. */
    retryAfterMs: Schema.Int,
    /** The length of the limit's window in milliseconds (a minute). */
    windowMs: Schema.Int
  })
  implements ClientFacing<429>
{
  get clientError() {
    const retryAfterSeconds = Math.max(1, Math.ceil(this.retryAfterMs / 1000))
    const window = this.windowMs === 60_000 ? "minute" : formatReset(this.windowMs)
    const message =
      this.scope === "auth"
        ? `Too many requests with a wrong API key from this client; no key is checked for ${retryAfterSeconds} s`
        : `Rate limit reached for ${limitedParty[this.scope]}: ${this.limit} requests per ${window}; retry after ${retryAfterSeconds} s`
    return clientError(429, "rate_limit_exceeded", message, {
      headers: {
        // The wrong-key limit is no request quota: it reports none.
        ...(this.scope === "auth" ? {} : rateLimitHeaders(this)),
        "retry-after": String(retryAfterSeconds),
        "retry-after-ms": String(this.retryAfterMs)
      }
    })
  }
}
