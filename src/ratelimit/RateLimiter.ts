import { Clock, Context, Effect, Layer, Metric, Option } from "effect"
import { labelled, rateLimited } from "../observability/metrics.ts"
import { type BucketTable, makeBucketTable } from "./BucketTable.ts"
import { RateLimitConfig, type RateLimitSettings } from "./RateLimitConfig.ts"
import { RateLimitExceeded, type RateLimitScope, RateLimitState } from "./RateLimitExceeded.ts"
import { CurrentRateLimitNote } from "./RateLimitNote.ts"
import type { BucketDecision } from "./TokenBucket.ts"

const MINUTE_MS = 60_000

/** Buckets kept per limit (about 100 bytes each); see `BucketTable` for what happens beyond. */
const MAX_BUCKETS = 100_000

const refusedOf = labelled(rateLimited)

const exceeded = (scope: RateLimitScope, table: BucketTable, decision: BucketDecision) =>
  new RateLimitExceeded({
    scope,
    limit: table.rule.limit,
    remaining: decision.remaining,
    resetMs: decision.resetMs,
    retryAfterMs: decision.retryAfterMs,
    windowMs: table.rule.windowMs
  })

/**
 * The gateway's own request limits, as token buckets in this process's memory: no database round
 * trip on the request path. With several replicas each one enforces its share
 * (`RATE_LIMIT_REPLICAS`), so the limits hold across replicas as far as the balancer spreads a
 * client's requests evenly. A limit of 0 is off.
 */
export class RateLimiter extends Context.Service<
  RateLimiter,
  {
    /** Per user on `/v1` (`namespacedUser`): the pipeline takes it once it knows the user. */
    readonly takeUser: (userId: string) => Effect.Effect<Option.Option<RateLimitState>, RateLimitExceeded>
    /** Per app key on `/v1`, by the key's hash. */
    readonly takeKey: (keyId: string) => Effect.Effect<Option.Option<RateLimitState>, RateLimitExceeded>
    /** Per key held in the database with a limit of its own, on whatever path it admits. */
    readonly takeOwnKeyLimit: (
      keyId: string,
      perMinute: number
    ) => Effect.Effect<Option.Option<RateLimitState>, RateLimitExceeded>
    /** Per client address on `/api`. */
    readonly takeClient: (client: string) => Effect.Effect<Option.Option<RateLimitState>, RateLimitExceeded>
    /** Fails while the client has no wrong keys left: its key is then not even checked. */
    readonly checkAuthFailures: (client: string) => Effect.Effect<void, RateLimitExceeded>
    /** Spends one of the client's wrong keys. */
    readonly recordAuthFailure: (client: string) => Effect.Effect<void>
  }
>()("gateway/ratelimit/RateLimiter") {
  static readonly make = (settings: RateLimitSettings): RateLimiter["Service"] => {
    // Each replica's share, rounded up so a small limit never becomes 0 (off).
    const tableFor = (perMinute: number) =>
      perMinute === 0
        ? undefined
        : makeBucketTable({ limit: Math.ceil(perMinute / settings.replicas), windowMs: MINUTE_MS }, MAX_BUCKETS)

    // On the path of every request: untraced, and no more than a map lookup and some arithmetic.
    const limit = (scope: RateLimitScope, perMinute: number) => {
      const table = tableFor(perMinute)
      if (table === undefined) return (_key: string) => Effect.succeedNone
      const refused = refusedOf({ scope })
      return (key: string) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const decision = table.take(key, now)
          if (!decision.allowed)
            return Metric.update(refused, 1).pipe(Effect.andThen(Effect.fail(exceeded(scope, table, decision))))
          const state = new RateLimitState({
            limit: table.rule.limit,
            remaining: decision.remaining,
            resetMs: decision.resetMs
          })
          return Effect.map(CurrentRateLimitNote, (note) => {
            note?.record(state)
            return Option.some(state)
          })
        })
    }

    // One table per distinct limit the keys held in the database set (they are few).
    const ownKeyLimits = new Map<
      number,
      (key: string) => Effect.Effect<Option.Option<RateLimitState>, RateLimitExceeded>
    >()
    const takeOwnKeyLimit = (keyId: string, perMinute: number) => {
      let take = ownKeyLimits.get(perMinute)
      if (take === undefined) {
        take = limit("key", perMinute)
        ownKeyLimits.set(perMinute, take)
      }
      return take(keyId)
    }

    const failures = tableFor(settings.authFailuresPerMinute)
    const lockedOut = refusedOf({ scope: "auth" })

    return RateLimiter.of({
      takeUser: limit("user", settings.userPerMinute),
      takeKey: limit("key", settings.keyPerMinute),
      takeOwnKeyLimit,
      takeClient: limit("client", settings.apiClientPerMinute),
      checkAuthFailures: (client) =>
        failures === undefined
          ? Effect.void
          : Effect.flatMap(Clock.currentTimeMillis, (now) => {
              const decision = failures.peek(client, now)
              return decision.allowed
                ? Effect.void
                : Metric.update(lockedOut, 1).pipe(Effect.andThen(Effect.fail(exceeded("auth", failures, decision))))
            }),
      recordAuthFailure: (client) =>
        failures === undefined
          ? Effect.void
          : Effect.map(Clock.currentTimeMillis, (now) => void failures.take(client, now))
    })
  }

  static readonly layer = Layer.effect(
    RateLimiter,
    Effect.gen(function* () {
      const settings = yield* RateLimitConfig
      const describe = (perMinute: number) => (perMinute === 0 ? "off" : `${perMinute}/min`)
      yield* Effect.logInfo(
        `rate limits: user ${describe(settings.userPerMinute)}, app key ${describe(settings.keyPerMinute)}, ` +
          `api client ${describe(settings.apiClientPerMinute)}, wrong keys ${describe(settings.authFailuresPerMinute)}` +
          (settings.replicas > 1 ? ` (each of ${settings.replicas} replicas enforces 1/${settings.replicas})` : "")
      )
      return RateLimiter.make(settings)
    })
  )
}
