import { describe, expect, it } from "@effect/vitest"
import { Effect, type Exit, Option, Tracer } from "effect"
import { exportedIfWorked } from "../../src/observability/idleSpans.ts"

/** A tracer that notes the spans ended (what an exporter would send), by name, after their parents' names. */
const recordingTracer = () => {
  const exported: Array<string> = []
  class RecordedSpan extends Tracer.NativeSpan {
    override end(endTime: bigint, exit: Exit.Exit<unknown, unknown>) {
      const parent = Option.getOrUndefined(this.parent)
      exported.push(parent?._tag === "Span" ? `${parent.name} > ${this.name}` : this.name)
      super.end(endTime, exit)
    }
  }
  return { exported, tracer: Tracer.make({ span: (options) => new RecordedSpan(options) }) }
}

const poll = (found: boolean) =>
  exportedIfWorked(
    (worked: boolean) => worked,
    (keep) =>
      Effect.gen(function* () {
        yield* Effect.void.pipe(Effect.withSpan("claim"))
        if (!found) return false
        yield* keep
        yield* Effect.void.pipe(Effect.withSpan("work"))
        return true
      }).pipe(Effect.withSpan("turn"))
  )

describe("exportedIfWorked", () => {
  it.effect("drops every span of a turn that found nothing, and keeps those of one that did work", () =>
    Effect.gen(function* () {
      const { exported, tracer } = recordingTracer()
      yield* poll(false).pipe(Effect.withTracer(tracer))
      yield* poll(false).pipe(Effect.withTracer(tracer))
      expect(exported).toEqual([])
      yield* poll(true).pipe(Effect.withTracer(tracer))
      // The spans ended before it knew come out when it does, the rest as they end; parents as they were.
      expect(exported).toEqual(["turn > claim", "turn > work", "turn"])
    })
  )

  it.effect("keeps the spans of a turn that failed, and drops those of one interrupted", () =>
    Effect.gen(function* () {
      const { exported, tracer } = recordingTracer()
      const failing = exportedIfWorked(
        () => false,
        () => Effect.fail("database down").pipe(Effect.withSpan("claim"))
      )
      yield* Effect.flip(failing.pipe(Effect.withTracer(tracer)))
      expect(exported).toEqual(["claim"])
      const interrupted = exportedIfWorked(
        () => false,
        () => Effect.interrupt.pipe(Effect.withSpan("wait"))
      )
      yield* Effect.exit(interrupted.pipe(Effect.withTracer(tracer)))
      expect(exported).toEqual(["claim"])
    })
  )
})
