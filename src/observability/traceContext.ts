import { Context, Effect, Option, Tracer } from "effect"
import { HttpTraceContext } from "effect/http"

/** Whether spans leave the process (`TracingLive` with an OTLP endpoint): only then is a trace worth naming to others. */
export const SpansExported = Context.Reference<boolean>("gateway/observability/SpansExported", {
  defaultValue: () => false
})

/**
 * The W3C `traceparent` header naming the current span, for a request the gateway sends on: the
 * provider's side of a completion then joins the caller's trace. `None` outside a span, and
 * while no spans are exported (nobody could look the trace up, so the provider gets no header).
 */
export const currentTraceparent: Effect.Effect<Option.Option<string>> = Effect.withFiber((fiber) => {
  if (!fiber.getRef(SpansExported)) return Effect.succeedNone
  const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
  return Effect.succeed(
    span?._tag === "Span" ? Option.fromNullishOr(HttpTraceContext.toHeaders(span)["traceparent"]) : Option.none()
  )
})
