import { Clock, Effect, type Exit, Option, Tracer } from "effect"

/** Milliseconds each timed span of one request took, by span name (the last one, if a name repeats). */
export type StageTimings = ReadonlyMap<string, number>

/** The timings being collected, by the span of the request they belong to. */
type TimingsByRequest = WeakMap<Tracer.AnySpan, Map<string, number>>

/** The collecting request's timings for a span: those of the nearest ancestor that collects. */
const timingsOf = (span: Tracer.Span, byRequest: TimingsByRequest): Map<string, number> | undefined => {
  let parent = span.parent
  while (parent._tag === "Some") {
    const timings = byRequest.get(parent.value)
    if (timings !== undefined) return timings
    parent = parent.value._tag === "Span" ? parent.value.parent : Option.none()
  }
  return undefined
}

/** A span that notes its duration when it ends; everything else is the span it wraps. */
class TimedSpan implements Tracer.Span {
  readonly _tag = "Span"
  private readonly span: Tracer.Span
  private readonly byRequest: TimingsByRequest
  constructor(span: Tracer.Span, byRequest: TimingsByRequest) {
    this.span = span
    this.byRequest = byRequest
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
    timingsOf(this.span, this.byRequest)?.set(this.span.name, Number(endTime - startTime) / 1e6)
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

export interface StageTimer {
  /**
   * Hands every span to the tracer in place (Effect's own, or the OTLP exporter) and notes how long
   * the timed spans took. Made once; requests run with it.
   */
  readonly tracer: Tracer.Tracer
  /** Runs `use` with the timings of the timed spans that end below the current span. */
  readonly collect: <A, E, R>(use: (timings: StageTimings) => Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/**
 * A request's stage timings are its spans, read back when they end, not a clock of their own: the
 * spans named in `names` that end below a span `collect` runs in are noted in that run's timings.
 */
export const makeStageTimer = (tracer: Tracer.Tracer, names: ReadonlySet<string>): StageTimer => {
  const byRequest: TimingsByRequest = new WeakMap()
  return {
    tracer: Tracer.make({
      span: (options) => {
        const span = tracer.span(options)
        return names.has(options.name) ? new TimedSpan(span, byRequest) : span
      },
      context: tracer.context
    }),
    collect: (use) =>
      Effect.flatMap(Effect.option(Effect.currentParentSpan), (span) => {
        const timings = new Map<string, number>()
        if (Option.isSome(span)) byRequest.set(span.value, timings)
        return use(timings)
      })
  }
}

/** When the current span started (now, outside a span). */
export const currentSpanStart: Effect.Effect<bigint> = Effect.currentSpan.pipe(
  Effect.map((span) => span.status.startTime),
  Effect.catch(() => Clock.currentTimeNanos)
)

/** Milliseconds since `start` (a span's start time). */
export const millisSince = (start: bigint): Effect.Effect<number> =>
  Effect.map(Clock.currentTimeNanos, (now) => Number(now - start) / 1e6)
