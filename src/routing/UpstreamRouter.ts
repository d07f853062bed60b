import { Context, Effect, Layer, Metric, Option, Predicate, type Redacted, Result } from "effect"
import { VirtualKeys } from "../keys/VirtualKeys.ts"
import { labelled, routeFallbacks, upstreamAttempts, upstreamRetries } from "../observability/metrics.ts"
import { StageTimings } from "../observability/requestSpan.ts"
import type { UpstreamFailure } from "../providers/errors.ts"
import type { ProviderName } from "../providers/ProviderName.ts"
import { UPSTREAM_CHAT_SPAN } from "../upstream/Upstream.ts"
import type { UpstreamReply, UpstreamTarget } from "../upstream/UpstreamReply.ts"
import { backoffMs, failureLabel, outcomeOf, retryAfterMs } from "./attemptFailure.ts"
import type { CircuitBreaker } from "./CircuitBreaker.ts"
import type { LoadedRoute, RoutedTarget } from "./Routes.ts"
import { RoutingConfig } from "./RoutingConfig.ts"
import { targetOrder } from "./targetOrder.ts"

/** Where one request may be served: a direct request's one provider, or one target of its model's route. */
export interface Candidate {
  readonly target: UpstreamTarget
  /** The routed model (the name the app sent), or `direct`. */
  readonly route: string
  /** `provider/model` of a routed target; the provider of a direct request. */
  readonly label: string
  /** The model a routed target is asked for (the request's own model otherwise). */
  readonly model: string | undefined
  readonly retries: number
  /** A routed target's (a direct request has nowhere else to go). */
  readonly breaker: CircuitBreaker | undefined
}

/** What serving a request took, for its receipt: which target answered, after how many attempts. */
export interface ServedBy {
  readonly route: string | undefined
  readonly provider: ProviderName
  readonly target: string
  readonly attempts: number
  /** Targets given up on before the one that answered. */
  readonly fallbacks: number
}

/** The keys a request brings to a route's targets. */
export interface RequestKeys {
  /** Its key's bound provider key: every target it may use (its provider's) goes with it, whatever the file names. */
  readonly bound: Redacted.Redacted<string> | undefined
  /** The key of a target that names none, by its provider: `X-Upstream-Key`, else the configured one. */
  readonly forProvider: (provider: ProviderName) => Option.Option<Redacted.Redacted<string>>
}

/** Sends one attempt; retried before the first byte by `serve`'s sender. */
export type Sender = (
  send: Effect.Effect<UpstreamReply, UpstreamFailure>
) => Effect.Effect<UpstreamReply, UpstreamFailure>

const DIRECT = "direct"

/** One request's attempts so far, across its targets. */
interface Trace {
  attempts: number
  /** When the first attempt went (`Date.now()`): no retry starts `UPSTREAM_RETRY_WITHIN_MS` after it. */
  firstAt: number | undefined
  /** Time spent in failed attempts and the waits after them. */
  failedMs: number
}

const UPSTREAM_FAILURES = new Set(["UpstreamError", "UpstreamUnreachable", "UpstreamTimeout", "UnsupportedParameter"])
const isUpstreamFailure = (error: unknown): error is UpstreamFailure =>
  Predicate.hasProperty(error, "_tag") && Predicate.isString(error._tag) && UPSTREAM_FAILURES.has(error._tag)
const attemptsOf = labelled(upstreamAttempts)
const retriesOf = labelled(upstreamRetries)
const fallbacksOf = labelled(routeFallbacks)

/**
 * Serves a request from its candidates, in order: each attempt sent, and sent again after a failure
 * that may pass (no connection, no answer in time, 5xx, 429, 408) with backoff and jitter, honouring
 * the provider's `Retry-After` up to `UPSTREAM_RETRY_MAX_MS`, within `UPSTREAM_RETRY_WITHIN_MS` of the
 * first attempt — always before any byte of the answer reached the client: a stream is never sent again
 * once it started; a whole answer whose body broke off while the gateway read it is.
 * A target that still fails, refuses its key or model (401, 403, 404), cannot carry the request, or
 * whose breaker is open, hands the request to the next; a request the provider found wrong (another
 * 4xx) goes back to the client.
 */
export class UpstreamRouter extends Context.Service<
  UpstreamRouter,
  {
    readonly direct: (target: UpstreamTarget) => Candidate
    /**
     * A route's targets in the order this request tries them (`targetOrder`), those it may use: with
     * a key (`keyFor` a provider, unless the target names its own) and `allowed`.
     */
    readonly routed: (
      route: LoadedRoute,
      keys: RequestKeys,
      allowed: (provider: ProviderName) => boolean
    ) => ReadonlyArray<Candidate>
    readonly serve: <A extends { readonly reply: UpstreamReply }, E>(
      candidates: ReadonlyArray<Candidate>,
      attempt: (candidate: Candidate, send: Sender) => Effect.Effect<A, E | UpstreamFailure>
    ) => Effect.Effect<A & { readonly served: ServedBy }, E | UpstreamFailure>
  }
>()("gateway/routing/UpstreamRouter") {
  static readonly layer = Layer.effect(
    UpstreamRouter,
    Effect.gen(function* () {
      const settings = yield* RoutingConfig
      const keys = yield* VirtualKeys

      const direct = (target: UpstreamTarget): Candidate => ({
        target,
        route: DIRECT,
        label: target.provider,
        model: undefined,
        retries: settings.retries,
        breaker: undefined
      })

      /** The provider key a `keyId` target's key is bound to, while that key is active and bound to the target's provider. */
      const heldKey = (target: RoutedTarget) => {
        const bound = keys.boundUpstream(target.keyId!)
        return bound?.provider === target.provider ? Option.some(bound.apiKey) : Option.none()
      }

      const routed = (route: LoadedRoute, keys: RequestKeys, allowed: (provider: ProviderName) => boolean) =>
        targetOrder(route.targets, Math.random).flatMap((target): ReadonlyArray<Candidate> => {
          if (!allowed(target.provider)) return []
          const apiKey =
            keys.bound !== undefined
              ? Option.some(keys.bound)
              : target.keyId !== undefined
                ? heldKey(target)
                : Option.orElse(target.apiKey, () => keys.forProvider(target.provider))
          if (Option.isNone(apiKey)) return []
          return [
            {
              target: {
                provider: target.provider,
                apiKey: apiKey.value,
                endpoint: target.endpoint,
                firstByteTimeoutMs: target.timeoutMs
              },
              route: route.model,
              label: target.label,
              model: target.model,
              retries: target.retries ?? settings.retries,
              breaker: target.breaker
            }
          ]
        })

      /** One candidate's attempts: the first, and the retries its failures allow. */
      const attempts =
        (candidate: Candidate, trace: Trace): Sender =>
        (send) =>
          Effect.gen(function* () {
            const labels = { route: candidate.route, target: candidate.label }
            for (let retry = 0; ; retry++) {
              trace.firstAt ??= Date.now()
              trace.attempts++
              const sent = performance.now()
              const result = yield* Effect.result(send)
              const now = Date.now()
              if (Result.isSuccess(result)) {
                candidate.breaker?.succeeded()
                yield* Metric.update(attemptsOf({ ...labels, outcome: "answered" }), 1)
                return result.success
              }
              const error = result.failure
              trace.failedMs += performance.now() - sent
              const outcome = outcomeOf(error)
              yield* Metric.update(attemptsOf({ ...labels, outcome: failureLabel(error) }), 1)
              // A request the provider found wrong says the provider is up.
              if (outcome === "final") candidate.breaker?.succeeded()
              else candidate.breaker?.failed(now)
              if (outcome !== "retry" || retry >= candidate.retries) return yield* Effect.fail(error)
              // Opened by this failure (or others'): the next target serves rather than this one again.
              if (candidate.breaker !== undefined && candidate.breaker.state(now) !== "closed")
                return yield* Effect.fail(error)
              const asked = retryAfterMs(error, now)
              const wait = asked ?? backoffMs(retry + 1, settings.retryBaseMs, settings.retryMaxMs, Math.random())
              if (wait > settings.retryMaxMs || now + wait - trace.firstAt > settings.retryWithinMs)
                return yield* Effect.fail(error)
              yield* Metric.update(retriesOf(labels), 1)
              trace.failedMs += wait
              yield* Effect.sleep(wait)
            }
          })

      const serve = <A extends { readonly reply: UpstreamReply }, E>(
        candidates: ReadonlyArray<Candidate>,
        attempt: (candidate: Candidate, send: Sender) => Effect.Effect<A, E | UpstreamFailure>
      ): Effect.Effect<A & { readonly served: ServedBy }, E | UpstreamFailure> =>
        Effect.gen(function* () {
          const trace: Trace = { attempts: 0, firstAt: undefined, failedMs: 0 }
          let lastFailure: UpstreamFailure | undefined
          for (const [index, candidate] of candidates.entries()) {
            const rest = candidates.slice(index + 1)
            const now = Date.now()
            const { breaker } = candidate
            const halfOpen = breaker?.state(now) === "half_open"
            const admitted = breaker === undefined || breaker.admit(now)
            // An open breaker is passed by while a later target may serve; the last one left is tried anyway.
            if (!admitted && rest.some((next) => next.breaker === undefined || next.breaker.state(now) !== "open")) {
              yield* Metric.update(fallbacksOf({ route: candidate.route, target: candidate.label }), 1)
              continue
            }
            const result = yield* Effect.result(
              attempt(candidate, attempts(candidate, trace)).pipe(
                // This request's probe, if it ended without an outcome (never sent: the request could not be
                // made for the target; or the client went away), decided nothing: the next request probes.
                Effect.onExit(() => Effect.sync(() => (halfOpen && admitted ? breaker?.abandoned() : undefined)))
              )
            )
            if (Result.isSuccess(result)) {
              // The failed attempts and the waits between them were the providers' time, not the gateway's overhead.
              if (trace.failedMs > 0) {
                const timings = yield* StageTimings
                timings?.set(UPSTREAM_CHAT_SPAN, (timings.get(UPSTREAM_CHAT_SPAN) ?? 0) + trace.failedMs)
              }
              const served: ServedBy = {
                route: candidate.route === DIRECT ? undefined : candidate.route,
                provider: candidate.target.provider,
                target: candidate.label,
                attempts: trace.attempts,
                fallbacks: index
              }
              return { ...result.success, served }
            }
            const error = result.failure
            // The request itself is wrong: another target would refuse it too (one that cannot carry it is passed by).
            if (!isUpstreamFailure(error) || (outcomeOf(error) === "final" && error._tag !== "UnsupportedParameter"))
              return yield* Effect.fail(error)
            // What the client gets when every target failed: the last provider's failure, rather than a parameter one could not carry.
            if (lastFailure === undefined || error._tag !== "UnsupportedParameter") lastFailure = error
            if (rest.length === 0) return yield* Effect.fail(lastFailure)
            yield* Metric.update(fallbacksOf({ route: candidate.route, target: candidate.label }), 1)
          }
          return yield* Effect.die(new Error("a request was served with no candidate target"))
        })

      return UpstreamRouter.of({ direct, routed, serve })
    })
  ).pipe(Layer.provide(VirtualKeys.layer))
}
