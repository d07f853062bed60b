import { Cause, Context, Effect, Exit, type Option, Tracer } from "effect"

/** What becomes of the spans a turn of a loop made: held until it is known, then kept or dropped. */
type Fate = "held" | "kept" | "dropped"

/** The turn's spans and what becomes of them. */
class Turn {
  fate: Fate = "held"
  readonly ended: Array<HeldSpan> = []

  decide(keep: boolean) {
    if (this.fate !== "held") return
    this.fate = keep ? "kept" : "dropped"
    for (const span of this.ended) if (keep) span.release()
    this.ended.length = 0
  }
}

/**
 * A span of the underlying tracer whose end (its export) waits for the turn's fate: exported as it
 * ended once the turn is kept, never once dropped. Everything else is the span's own, so its ids,
 * attributes and children are those the exporter sees.
 */
class HeldSpan implements Tracer.Span {
  readonly _tag = "Span"
  private readonly span: Tracer.Span
  private readonly turn: Turn
  private ending: { readonly endTime: bigint; readonly exit: Exit.Exit<unknown, unknown> } | undefined

  constructor(span: Tracer.Span, turn: Turn) {
    this.span = span
    this.turn = turn
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
  get parent(): Option.Option<Tracer.AnySpan> {
    return this.span.parent
  }
  get annotations() {
    return this.span.annotations
  }
  get status(): Tracer.SpanStatus {
    const ending = this.ending
    return ending === undefined
      ? this.span.status
      : { _tag: "Ended", startTime: this.span.status.startTime, endTime: ending.endTime, exit: ending.exit }
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
    if (this.ending !== undefined || this.turn.fate === "dropped") return
    if (this.turn.fate === "kept") return this.span.end(endTime, exit)
    this.ending = { endTime, exit }
    this.turn.ended.push(this)
  }
  release() {
    if (this.ending !== undefined) this.span.end(this.ending.endTime, this.ending.exit)
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
 * Inside a turn: keeps its spans, for work found deep in a call (a job deferred by a claim that then
 * found nothing); outside one, nothing.
 */
export const KeepTurnSpans = Context.Reference<Effect.Effect<void>>("gateway/observability/KeepTurnSpans", {
  defaultValue: () => Effect.void
})

/**
 * One turn of a background loop (a poll of the queue, a retention sweep, a check for changed keys)
 * whose spans are exported only when it did something: `worked` reads its result. A turn that found
 * nothing to do leaves no span; one that did work, or failed, keeps all of its spans as they were
 * made. While no spans leave the process (the native tracer) the turn runs as it is.
 *
 * The spans are made as usual and only their export waits for the turn's end, so a turn that does
 * work should say so as soon as it knows (`keep`, given to `turn`): the spans it makes after that go
 * out as they end, and nothing is held for the length of a long job.
 */
export const exportedIfWorked = <A, E, R>(
  worked: (result: A) => boolean,
  turn: (keep: Effect.Effect<void>) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    const tracer = fiber.getRef(Tracer.Tracer)
    if (tracer === Tracer.nativeTracer) return turn(Effect.void)
    const spans = new Turn()
    const holding = Tracer.make({
      span: (options) => {
        const span = tracer.span(options)
        return spans.fate === "kept" ? span : new HeldSpan(span, spans)
      },
      context: tracer.context
    })
    const keep = Effect.sync(() => spans.decide(true))
    return turn(keep).pipe(
      Effect.provideService(KeepTurnSpans, keep),
      Effect.withTracer(holding),
      Effect.onExit((exit) =>
        Effect.sync(() =>
          spans.decide(Exit.isSuccess(exit) ? worked(exit.value) : !Cause.hasInterruptsOnly(exit.cause))
        )
      )
    )
  })
