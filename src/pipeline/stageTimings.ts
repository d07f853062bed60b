import { Clock, Effect, type Exit, Tracer } from "effect"

/** Milliseconds each timed span of one request took, by span name (the last one, if a name repeats). */
export type StageTimings = ReadonlyMap<string, number>

/** A span that notes its duration when it ends; everything else is the span it wraps. */
class TimedSpan implements Tracer.Span {
  readonly _tag = "Span"
  private readonly span: Tracer.Span
  private readonly timings: Map<string, number>
  constructor(span: Tracer.Span, timings: Map<string, number>) {
    this.span = span
    this.timings = timings
  }
  get name() {
    return this.span.name
  }
  get spanId() {
    return this.span.spanId
  }
  get traceId() {
    return this.span.traceId
  }
  get parent() {
    return this.span.parent
  }
  get annotations() {
    return this.span.annotations
  }
  get status() {
    return this.span.status
  }
  get attributes() {
    return this.span.attributes
  }
  get links() {
    return this.span.links
  }
  get sampled() {
    return this.span.sampled
  }
  get kind() {
    return this.span.kind
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>) {
    const { startTime } = this.span.status
    this.span.end(endTime, exit)
    this.timings.set(this.span.name, Number(endTime - startTime) / 1e6)
  }
  attribute(key: string, value: unknown) {
    this.span.attribute(key, value)
  }
  event(name: string, startTime: bigint, attributes?: Record<string, unknown>) {
    this.span.event(name, startTime, attributes)
  }
  addLinks(links: ReadonlyArray<Tracer.SpanLink>) {
    this.span.addLinks(links)
  }
}

/**
 * Runs `use` with a tracer that hands every span to the tracer in place (Effect's own, or the
 * OTLP exporter) and notes how long the spans named in `names` took: the request's stage timings
 * are its spans, read back, not a clock of their own.
 */
export const withStageTimings = <A, E, R>(
  names: ReadonlySet<string>,
  use: (timings: StageTimings) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.tracer, (tracer) => {
    const timings = new Map<string, number>()
    const timing = Tracer.make({
      span: (options) => {
        const span = tracer.span(options)
        return names.has(options.name) ? new TimedSpan(span, timings) : span
      },
      context: tracer.context
    })
    return Effect.withTracer(use(timings), timing)
  })

/** When the current span started (now, outside a span). */
export const currentSpanStart: Effect.Effect<bigint> = Effect.currentSpan.pipe(
  Effect.map((span) => span.status.startTime),
  Effect.catch(() => Clock.currentTimeNanos)
)

/** Milliseconds since `start` (a span's start time). */
export const millisSince = (start: bigint): Effect.Effect<number> =>
  Effect.map(Clock.currentTimeNanos, (now) => Number(now - start) / 1e6)
