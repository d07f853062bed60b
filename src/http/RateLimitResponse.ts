import type { HttpServerResponse } from "effect/http"
import type { RateLimitExceeded, RateLimitState } from "../ratelimit/RateLimitExceeded.ts"
import { errorResponse } from "./OpenAiError.ts"

/** A duration the way OpenAI writes its reset headers: `20ms`, `1.5s`, `6m0s`, `1h0m0s`. */
export const formatReset = (ms: number): string => {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`
  const hours = Math.floor(ms / 3_600_000)
  const minutes = Math.floor((ms % 3_600_000) / 60_000)
  const seconds = Number(((ms % 60_000) / 1000).toFixed(3))
  return `${hours > 0 ? `${hours}h${minutes}m` : minutes > 0 ? `${minutes}m` : ""}${seconds}s`
}

/** OpenAI's request-limit headers, so clients and SDKs that read them work unchanged. */
export const rateLimitHeaders = (state: Pick<RateLimitState, "limit" | "remaining" | "resetMs">): Record<string, string> => ({
  "x-ratelimit-limit-requests": String(state.limit),
  "x-ratelimit-remaining-requests": String(state.remaining),
  "x-ratelimit-reset-requests": formatReset(state.resetMs)
})

const what = {
  user: "this user",
  key: "this API key",
  client: "this client on the management API",
  auth: "wrong API keys from this client"
} as const

/**
 * The 429 for a request refused by one of the gateway's limits: OpenAI's error shape and headers,
 * with `retry-after` (seconds) and `retry-after-ms`, which the official SDKs honour when they retry.
 */
export const rateLimitResponse = (error: RateLimitExceeded): HttpServerResponse.HttpServerResponse => {
  const retryAfterSeconds = Math.max(1, Math.ceil(error.retryAfterMs / 1000))
  const window = error.windowMs === 60_000 ? "minute" : formatReset(error.windowMs)
  const message = error.scope === "auth"
    ? `Too many requests with a wrong API key from this client; no key is checked for ${retryAfterSeconds} s`
    : `Rate limit reached for ${what[error.scope]}: ${error.limit} requests per ${window}; retry after ${retryAfterSeconds} s`
  return errorResponse(429, "rate_limit_exceeded", message, {
    headers: {
      ...(error.scope === "auth" ? {} : rateLimitHeaders(error)),
      "retry-after": String(retryAfterSeconds),
      "retry-after-ms": String(error.retryAfterMs)
    }
  })
}
