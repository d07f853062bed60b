import { Context, Duration, Effect } from "effect"

/**
 * The span of a step every proxied request takes (a pipeline stage, the provider call):
 * `Effect.fnUntraced(body, requestSpan(name))` is `Effect.fn(name)(body)` without the call-site
 * stack `Effect.fn` captures on every call. That capture (an `Error` each time) cost 2.3% of a
 * request's instructions for the five stages alone (`npm run bench:instructions`); a failure still
 * carries the span's name.
 */
export const requestSpan = (name: string) => Effect.withSpan(name, undefined, { captureStackTrace: false })

/**
 * Milliseconds each stage of the current request took, by its span's name: a fresh map per
 * request (the completion pipeline provides one), read for the overhead header, the metrics and
 * the debug log. None outside a request.
 */
export const StageTimings = Context.Reference<Map<string, number> | undefined>("gateway/observability/StageTimings", {
  defaultValue: () => undefined
})

/** A stage of a request: its span (`requestSpan`), and its duration noted in the request's `StageTimings`. */
export const requestStage =
  (name: string) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
    const spanned = requestSpan(name)(self)
    return Effect.flatMap(Effect.service(StageTimings), (timings) =>
      timings === undefined
        ? spanned
        : Effect.map(Effect.timed(spanned), ([took, value]) => {
            timings.set(name, Duration.toMillis(took))
            return value
          })
    )
  }
