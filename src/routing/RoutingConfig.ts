import { type Config, Context } from "effect"
import { nonNegativeInt, optionalString, positiveInt, section } from "../config/values.ts"

/** Retries before the first byte, the routes file, and the routed targets' circuit breakers. */
export const routingFromEnv = section({
  /** `ROUTES_FILE`: model aliases and the targets serving them (`docs/routing.md`); unset: no routes. */
  routesFile: optionalString("ROUTES_FILE"),
  /** `UPSTREAM_RETRIES`: attempts after the first at one target, before any byte of the answer (0: none). */
  retries: nonNegativeInt("UPSTREAM_RETRIES", 2),
  /** The first retry waits between half and all of this; each further one twice as long. */
  retryBaseMs: positiveInt("UPSTREAM_RETRY_BASE_MS", 250),
  /** The longest wait between two attempts (backoff, or the provider's `Retry-After`). */
  retryMaxMs: positiveInt("UPSTREAM_RETRY_MAX_MS", 5_000),
  /**
   * No retry starts this long after the request's first attempt: a client waiting for its answer
   * gets the provider's error (or the next target's answer) instead.
   */
  retryWithinMs: positiveInt("UPSTREAM_RETRY_WITHIN_MS", 20_000),
  /** Consecutive failed attempts that open a routed target's circuit breaker. */
  breakerFailures: positiveInt("UPSTREAM_BREAKER_FAILURES", 5),
  /** How long an open breaker keeps requests off its target before one probes it. */
  breakerCooldownMs: positiveInt("UPSTREAM_BREAKER_COOLDOWN_MS", 30_000)
})

export type RoutingSettings = Config.Success<typeof routingFromEnv>

export class RoutingConfig extends Context.Service<RoutingConfig, RoutingSettings>()("gateway/routing/RoutingConfig") {}
