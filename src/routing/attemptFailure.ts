import type { UpstreamFailure } from "../providers/errors.ts"

/**
 * What a failed attempt at a provider says about the next step:
 * - `retry`: the provider may answer if asked again (5xx, 429, 408, no connection, no answer in time);
 * - `next`: this target cannot serve the request but another may (its key or model is refused: 401, 403, 404);
 * - `final`: the request itself is wrong (any other 4xx, a parameter the provider cannot carry): the client gets it.
 */
export type FailureOutcome = "retry" | "next" | "final"

export const outcomeOf = (error: UpstreamFailure): FailureOutcome => {
  switch (error._tag) {
    case "UpstreamUnreachable":
    case "UpstreamTimeout":
      return "retry"
    case "UnsupportedParameter":
      return "final"
    case "UpstreamError":
      if (error.status >= 500 || error.status === 429 || error.status === 408) return "retry"
      if (error.status === 401 || error.status === 403 || error.status === 404) return "next"
      return "final"
  }
}

/** The outcomes `gateway_upstream_attempts_total` counts attempts under. */
export const ATTEMPT_OUTCOMES = [
  "answered",
  "server_error",
  "rate_limited",
  "unreachable",
  "timeout",
  "refused",
  "unsupported"
] as const
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number]

/** The label an attempt's failure is counted under (`gateway_upstream_attempts_total`). */
export const failureLabel = (error: UpstreamFailure): AttemptOutcome => {
  switch (error._tag) {
    case "UpstreamUnreachable":
      return "unreachable"
    case "UpstreamTimeout":
      return "timeout"
    case "UnsupportedParameter":
      return "unsupported"
    case "UpstreamError":
      return error.status === 429 ? "rate_limited" : error.status >= 500 ? "server_error" : "refused"
  }
}

/**
 * How long the provider asked to be left alone (`retry-after-ms`, or `retry-after` in seconds or as
 * an HTTP date), in milliseconds; `undefined` when it did not say.
 */
export const retryAfterMs = (error: UpstreamFailure, now: number): number | undefined => {
  if (error._tag !== "UpstreamError") return undefined
  const ms = Number(error.headers["retry-after-ms"])
  if (error.headers["retry-after-ms"] !== undefined && Number.isFinite(ms) && ms >= 0) return ms
  const after = error.headers["retry-after"]?.trim()
  if (after === undefined || after === "") return undefined
  if (/^\d+(\.\d+)?$/.test(after)) return Number(after) * 1000
  const date = Date.parse(after)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/**
 * Exponential backoff with jitter: the `retry`-th wait (from 1) lies between half and all of
 * min(max, base·2^(retry−1)), so replicas that failed together do not come back together.
 */
export const backoffMs = (retry: number, baseMs: number, maxMs: number, random: number): number => {
  const ceiling = Math.min(maxMs, baseMs * 2 ** (retry - 1))
  return Math.floor(ceiling / 2 + (random * ceiling) / 2)
}
