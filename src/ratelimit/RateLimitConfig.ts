import { type Config, Context } from "effect"
import { nonNegativeInt, positiveInt, section } from "../config/values.ts"

/** The gateway's own request limits (token buckets, per replica; 0 switches one off). */
export const rateLimitFromEnv = section({
  /** Requests per minute per user id on `/v1`. */
  userPerMinute: nonNegativeInt("RATE_LIMIT_USER_PER_MINUTE", 0),
  /** Requests per minute per app key on `/v1`. */
  keyPerMinute: nonNegativeInt("RATE_LIMIT_KEY_PER_MINUTE", 0),
  /** Requests per minute per client address on `/api`. */
  apiClientPerMinute: nonNegativeInt("RATE_LIMIT_API_PER_MINUTE", 1200),
  /** Wrong keys per minute per client address; past them the client gets 429 without a key check. */
  authFailuresPerMinute: nonNegativeInt("AUTH_FAILURES_PER_MINUTE", 10),
  /** Replicas behind the balancer: each enforces 1/N of every limit (the buckets live in each process). */
  replicas: positiveInt("RATE_LIMIT_REPLICAS", 1)
})

export type RateLimitSettings = Config.Success<typeof rateLimitFromEnv>

export class RateLimitConfig extends Context.Service<RateLimitConfig, RateLimitSettings>()(
  "gateway/ratelimit/RateLimitConfig"
) {}
