import { Schema } from "effect"

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

/** A request refused by one of the gateway's own limits (429 `rate_limit_exceeded`). */
export class RateLimitExceeded extends Schema.TaggedError<RateLimitExceeded>()("RateLimitExceeded", {
  scope: RateLimitScope,
  limit: Schema.Int,
  remaining: Schema.Int,
  resetMs: Schema.Int,
  /** Milliseconds until one more request is allowed. */
  retryAfterMs: Schema.Int,
  /** The length of the limit's window in milliseconds (a minute). */
  windowMs: Schema.Int
}) {}
