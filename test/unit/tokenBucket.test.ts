import { assert, describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { formatReset, rateLimitHeaders, rateLimitResponse } from "../../src/app/RateLimitResponse.ts"
import { makeBucketTable } from "../../src/ratelimit/BucketTable.ts"
import { clientKey } from "../../src/ratelimit/clientKey.ts"
import { RateLimiter } from "../../src/ratelimit/RateLimiter.ts"
import { CurrentRateLimitNote, RateLimitNote } from "../../src/ratelimit/RateLimitNote.ts"
import { peekToken, takeToken } from "../../src/ratelimit/TokenBucket.ts"

const perMinute = (limit: number) => ({ limit, windowMs: 60_000 })

describe("token bucket", () => {
  it("allows a full window's worth at once, then one request per window / limit", () => {
    const rule = perMinute(3)
    let bucket = takeToken(rule, undefined, 0)
    expect(bucket).toMatchObject({ allowed: true, remaining: 2, resetMs: 20_000, retryAfterMs: 0 })
    bucket = takeToken(rule, bucket.bucket, 0)
    bucket = takeToken(rule, bucket.bucket, 0)
    expect(bucket).toMatchObject({ allowed: true, remaining: 0, resetMs: 60_000 })
    const refused = takeToken(rule, bucket.bucket, 5_000)
    // A token every 20 s: 15 s to go, and 55 s until all three are back.
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 15_000, resetMs: 55_000 })
    expect(takeToken(rule, refused.bucket, 20_000)).toMatchObject({ allowed: true, remaining: 0 })
  })

  it("refills up to the limit, never beyond", () => {
    const rule = perMinute(2)
    const spent = takeToken(rule, takeToken(rule, undefined, 0).bucket, 0)
    expect(peekToken(rule, spent.bucket, 10 * 60_000)).toMatchObject({ allowed: true, remaining: 2, resetMs: 0 })
  })

  it("peeks without spending", () => {
    const rule = perMinute(1)
    const spent = takeToken(rule, undefined, 0)
    expect(peekToken(rule, spent.bucket, 0).allowed).toBe(false)
    expect(peekToken(rule, undefined, 0)).toMatchObject({ allowed: true, remaining: 1 })
  })
})

describe("bucket table", () => {
  it("keeps one bucket per key", () => {
    const table = makeBucketTable(perMinute(1), 100)
    expect(table.take("a", 0).allowed).toBe(true)
    expect(table.take("a", 0).allowed).toBe(false)
    expect(table.take("b", 0).allowed).toBe(true)
  })

  it("stays within its bound by forgetting full buckets, then the least recently used", () => {
    const table = makeBucketTable(perMinute(1), 10)
    for (let i = 0; i < 10; i++) table.take(`old-${i}`, 0)
    // A minute later the old buckets are full again: the eleventh key sweeps them out.
    table.take("new", 60_000)
    expect(table.size()).toBe(1)
    for (let i = 0; i < 20; i++) table.take(`busy-${i}`, 60_000)
    expect(table.size()).toBeLessThanOrEqual(10)
    // The most recent keys are the ones kept: their buckets are still empty.
    expect(table.take("busy-19", 60_000).allowed).toBe(false)
  })
})

describe("RateLimiter", () => {
  const settings = { userPerMinute: 2, keyPerMinute: 0, apiClientPerMinute: 4, authFailuresPerMinute: 2, replicas: 1 }

  it.effect("refuses the user past the limit with what the 429 needs, until the clock gives a token back", () =>
    Effect.gen(function* () {
      const limiter = RateLimiter.make(settings)
      yield* limiter.takeUser("u1")
      const last = yield* limiter.takeUser("u1")
      assert.deepStrictEqual(
        Option.map(last, (s) => s.remaining),
        Option.some(0)
      )
      const refused = yield* Effect.flip(limiter.takeUser("u1"))
      expect(refused).toMatchObject({
        _tag: "RateLimitExceeded",
        scope: "user",
        limit: 2,
        remaining: 0,
        retryAfterMs: 30_000
      })
      // Another user has a bucket of their own.
      assert.isTrue(Option.isSome(yield* limiter.takeUser("u2")))
      yield* TestClock.adjust("30 seconds")
      assert.isTrue(Option.isSome(yield* limiter.takeUser("u1")))
    })
  )

  it.effect("treats a limit of 0 as off", () =>
    Effect.gen(function* () {
      const limiter = RateLimiter.make(settings)
      for (let i = 0; i < 100; i++) assert.isTrue(Option.isNone(yield* limiter.takeKey("k")))
    })
  )

  it.effect("divides each limit among the replicas, rounding up", () =>
    Effect.gen(function* () {
      const limiter = RateLimiter.make({ ...settings, apiClientPerMinute: 5, replicas: 2 })
      const first = yield* limiter.takeClient("10.0.0.1")
      assert.deepStrictEqual(
        Option.map(first, (s) => s.limit),
        Option.some(3)
      )
    })
  )

  it.effect("locks a client out after its wrong keys, without spending on a check", () =>
    Effect.gen(function* () {
      const limiter = RateLimiter.make(settings)
      yield* limiter.checkAuthFailures("c")
      yield* limiter.checkAuthFailures("c")
      yield* limiter.recordAuthFailure("c")
      yield* limiter.checkAuthFailures("c")
      yield* limiter.recordAuthFailure("c")
      const locked = yield* Effect.flip(limiter.checkAuthFailures("c"))
      expect(locked).toMatchObject({ scope: "auth", retryAfterMs: 30_000 })
      yield* limiter.checkAuthFailures("other")
      yield* TestClock.adjust("30 seconds")
      yield* limiter.checkAuthFailures("c")
    })
  )

  it.effect("notes the tightest limit of the request for its headers", () =>
    Effect.gen(function* () {
      const limiter = RateLimiter.make(settings)
      const note = new RateLimitNote()
      yield* limiter.takeClient("c").pipe(Effect.provideService(CurrentRateLimitNote, note))
      yield* limiter.takeUser("u").pipe(Effect.provideService(CurrentRateLimitNote, note))
      expect(note.current).toMatchObject({ limit: 2, remaining: 1 })
    })
  )
})

describe("429 response", () => {
  it("writes reset times the way OpenAI does", () => {
    expect([formatReset(20), formatReset(1500), formatReset(60_000), formatReset(3_725_000)]).toEqual([
      "20ms",
      "1.5s",
      "1m0s",
      "1h2m5s"
    ])
  })

  it("carries retry-after, retry-after-ms and the x-ratelimit headers in the OpenAI error shape", async () => {
    const limiter = RateLimiter.make({
      userPerMinute: 1,
      keyPerMinute: 0,
      apiClientPerMinute: 0,
      authFailuresPerMinute: 0,
      replicas: 1
    })
    await Effect.runPromise(limiter.takeUser("u"))
    const error = await Effect.runPromise(Effect.flip(limiter.takeUser("u")))
    const response = rateLimitResponse(error)
    expect(response.status).toBe(429)
    expect(response.headers).toMatchObject({
      "retry-after": String(Math.ceil(error.retryAfterMs / 1000)),
      "retry-after-ms": String(error.retryAfterMs),
      ...rateLimitHeaders({ limit: 1, remaining: 0, resetMs: error.resetMs })
    })
    const body =
      response.body._tag === "Uint8Array" ? JSON.parse(new TextDecoder().decode(response.body.body)) : undefined
    expect(body).toMatchObject({ error: { type: "rate_limit_error", code: "rate_limit_exceeded", param: null } })
  })
})

describe("client key", () => {
  it("is the IPv4 address, or the /64 of an IPv6 one", () => {
    expect(clientKey(Option.some("::ffff:203.0.113.9"))).toBe("203.0.113.9")
    expect(clientKey(Option.some("2001:db8:1:2:aaaa::1"))).toBe(clientKey(Option.some("2001:db8:1:2:bbbb::2")))
    expect(clientKey(Option.some("2001:db8:1:3::1"))).not.toBe(clientKey(Option.some("2001:db8:1:2::1")))
    expect(clientKey(Option.none())).toBe("unknown")
  })
})
