/**
 * Token buckets, as pure functions of the time: a rule allows `limit` requests per `windowMs`
 * and holds at most `limit` tokens, so an idle client may spend a whole window's worth at once and
 * then one request every `windowMs / limit`.
 */

export interface BucketRule {
  readonly limit: number
  readonly windowMs: number
}

/** Tokens left at time `at` (milliseconds). An absent bucket is a full one. */
export interface Bucket {
  readonly tokens: number
  readonly at: number
}

export interface BucketDecision {
  readonly allowed: boolean
  /** The bucket after this request (unchanged but brought up to date when refused). */
  readonly bucket: Bucket
  /** Whole requests still allowed right now. */
  readonly remaining: number
  /** Milliseconds until the bucket is full again. */
  readonly resetMs: number
  /** Milliseconds until the next request is allowed (0 when it is already). */
  readonly retryAfterMs: number
}

const tokensAt = (rule: BucketRule, bucket: Bucket | undefined, now: number) =>
  bucket === undefined
    ? rule.limit
    : Math.min(rule.limit, bucket.tokens + (Math.max(0, now - bucket.at) * rule.limit) / rule.windowMs)

const decide = (rule: BucketRule, tokens: number, now: number, spend: boolean): BucketDecision => {
  const perMs = rule.limit / rule.windowMs
  const allowed = tokens >= 1
  const left = allowed && spend ? tokens - 1 : tokens
  return {
    allowed,
    bucket: { tokens: left, at: now },
    remaining: Math.floor(left),
    resetMs: Math.ceil((rule.limit - left) / perMs),
    retryAfterMs: left >= 1 ? 0 : Math.ceil((1 - left) / perMs)
  }
}

/** Spends one token if there is one. */
export const takeToken = (rule: BucketRule, bucket: Bucket | undefined, now: number): BucketDecision =>
  decide(rule, tokensAt(rule, bucket, now), now, true)

/** Whether a request would be allowed, spending nothing. */
export const peekToken = (rule: BucketRule, bucket: Bucket | undefined, now: number): BucketDecision =>
  decide(rule, tokensAt(rule, bucket, now), now, false)

/** A full bucket is the same as no bucket: it can be forgotten. */
export const isFull = (rule: BucketRule, bucket: Bucket, now: number) => tokensAt(rule, bucket, now) >= rule.limit
