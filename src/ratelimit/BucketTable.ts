import { type Bucket, type BucketDecision, type BucketRule, isFull, peekToken, takeToken } from "./TokenBucket.ts"

/**
 * The buckets of one rule, by key (a user id, a key's hash, a client address), in this process.
 * Bounded: past `maxEntries` the full buckets are forgotten (they equal absent ones), then the
 * least recently used; forgetting a bucket only ever makes its owner's limit more lenient.
 */
export interface BucketTable {
  readonly rule: BucketRule
  readonly take: (key: string, now: number) => BucketDecision
  readonly peek: (key: string, now: number) => BucketDecision
  readonly size: () => number
}

export const makeBucketTable = (rule: BucketRule, maxEntries: number): BucketTable => {
  // A Map iterates in insertion order: deleting and re-inserting on use keeps it least recently used first.
  const buckets = new Map<string, Bucket>()

  const prune = (now: number) => {
    for (const [key, bucket] of buckets) {
      if (isFull(rule, bucket, now)) buckets.delete(key)
    }
    // Leave room, so a table at its bound is not swept on every request.
    const target = Math.floor(maxEntries * 0.9)
    for (const key of buckets.keys()) {
      if (buckets.size <= target) break
      buckets.delete(key)
    }
  }

  return {
    rule,
    take: (key, now) => {
      const decision = takeToken(rule, buckets.get(key), now)
      buckets.delete(key)
      buckets.set(key, decision.bucket)
      if (buckets.size > maxEntries) prune(now)
      return decision
    },
    peek: (key, now) => peekToken(rule, buckets.get(key), now),
    size: () => buckets.size
  }
}
