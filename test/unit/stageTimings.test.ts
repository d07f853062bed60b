import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { currentSpanStart, makeStageTimer, millisSince, type StageTimings } from "../../src/pipeline/stageTimings.ts"

/** `use` under a span of its own, with a stage timer for `names` in place: what the completion pipeline does. */
const withStageTimings = <A, E>(names: ReadonlySet<string>, use: (timings: StageTimings) => Effect.Effect<A, E>) =>
  Effect.flatMap(Effect.tracer, (tracer) => {
    const timer = makeStageTimer(tracer, names)
    return timer.collect(use).pipe(Effect.withSpan("request"), Effect.withTracer(timer.tracer))
  })

const stage = (name: string, millis: number) =>
  Effect.fn(name)(function* () {
    yield* TestClock.adjust(`${millis} millis`)
  })

describe("stage timings", () => {
  it.effect("are the durations of the named spans, read when they end", () =>
    Effect.gen(function* () {
      const { timings, total } = yield* withStageTimings(new Set(["first", "second"]), (timings) =>
        Effect.gen(function* () {
          const started = yield* currentSpanStart
          yield* stage("first", 5)()
          yield* stage("untimed", 7)()
          yield* stage("second", 11)()
          return { timings, total: yield* millisSince(started) }
        })
      )
      expect(Object.fromEntries(timings)).toEqual({ first: 5, second: 11 })
      expect(total).toBe(23)
    })
  )

  it.effect("belong to the request whose span they end under", () =>
    Effect.gen(function* () {
      const timer = makeStageTimer(yield* Effect.tracer, new Set(["stage"]))
      // Two requests at once, each with a stage that waits as long as it is told.
      const request = (millis: number) =>
        timer
          .collect((timings) => Effect.as(Effect.sleep(`${millis} millis`).pipe(Effect.withSpan("stage")), timings))
          .pipe(Effect.withSpan("request"))
      const both = yield* Effect.all([request(3), request(5)], { concurrency: 2 }).pipe(
        Effect.withTracer(timer.tracer),
        Effect.forkChild
      )
      yield* TestClock.adjust("10 millis")
      const [first, second] = yield* Fiber.join(both)
      expect(Object.fromEntries(first)).toEqual({ stage: 3 })
      expect(Object.fromEntries(second)).toEqual({ stage: 5 })
    })
  )

  it.effect("leave the spans themselves as they were: names, parents and end times", () =>
    Effect.gen(function* () {
      const { outer, inner } = yield* withStageTimings(new Set(["outer"]), () =>
        Effect.gen(function* () {
          const inner = yield* Effect.currentSpan.pipe(Effect.withSpan("inner"))
          return { outer: yield* Effect.currentSpan, inner }
        }).pipe(Effect.withSpan("outer"))
      )
      expect(outer.name).toBe("outer")
      expect(inner._tag === "Span" && inner.parent._tag === "Some" ? inner.parent.value.spanId : undefined).toBe(
        outer.spanId
      )
      expect(outer.status._tag).toBe("Ended")
    })
  )
})
