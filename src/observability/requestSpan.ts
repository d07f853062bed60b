import { Context, Duration, Effect, Metric } from "effect"
import { stageTime } from "./metrics.ts"

/**
 * The span of a step every proxied request takes (a pipeline stage, the provider call):
 * `Effect.fnUntraced(body, requestSpan(name))` is `Effect.fn(name)(body)` without the call-site
 * stack `Effect.fn` captures on every call. That capture (an `Error` each time) cost 2.3% of a
 * request's instructions for the five stages alone (`npm run bench:instructions`); a failure still
 * carries the span's name.
 */
export const requestSpan = (name: string) => Effect.withSpan(name, undefined, { captureStackTrace: false })

/**
 * Milliseconds each stage of the current request took, by the stage's name: a fresh map per
 * request (the completion pipeline provides one), read for the overhead header, the metrics and
 * the debug log. None outside a request.
 */
export const StageTimings = Context.Reference<Map<string, number> | undefined>("gateway/observability/StageTimings", {
  defaultValue: () => undefined
})

/**
 * Every stage `gateway_stage_seconds` times (`requestStage`, `stageTimed`): their series are there,
 * empty, from the start, so a dashboard has them before the first completion.
 */
export const REQUEST_STAGES = [
  "pipeline.resolveUser",
  "pipeline.loadProfile",
  "pipeline.recall",
  "pipeline.restore",
  "pipeline.inject",
  "pipeline.forward",
  "pipeline.tail",
  "pipeline.record",
  "Upstream.chat"
] as const

/**
 * The duration of a stage of a request, without a span: in `gateway_stage_seconds` and, until the
 * answer's head is sent, in the request's `StageTimings` (a stream's record comes later).
 */
export const stageTimed = (name: string) => {
  const series = Metric.withAttributes(stageTime, { stage: name })
  return <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(Effect.timed(self), ([took, value]) => {
      const ms = Duration.toMillis(took)
      return Effect.flatMap(Effect.service(StageTimings), (timings) => {
        timings?.set(name, ms)
        return Effect.as(Metric.update(series, ms / 1000), value)
      })
    })
}

/** A stage of a request: its span (`requestSpan`) and its duration (`stageTimed`). */
export const requestStage = (name: string) => {
  const timed = stageTimed(name)
  const span = requestSpan(name)
  return <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => timed(span(self))
}
