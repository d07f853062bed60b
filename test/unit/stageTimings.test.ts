import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { currentSpanStart, millisSince, withStageTimings } from "../../src/pipeline/stageTimings.ts"

const stage = (name: string, millis: number) =>
  Effect.fn(name)(function*() {
    yield* TestClock.adjust(`${millis} millis`)
  })

describe("stage timings", () => {
  it.effect("are the durations of the named spans, read when they end", () =>
    Effect.gen(function*() {
      const { timings, total } = yield* withStageTimings(
        new Set(["first", "second"]),
        (timings) =>
          Effect.gen(function*() {
            const started = yield* currentSpanStart
            yield* stage("first", 5)()
            yield* stage("untimed", 7)()
            yield* stage("second", 11)()
            return { timings, total: yield* millisSince(started) }
          }).pipe(Effect.withSpan("request"))
      )
      expect(Object.fromEntries(timings)).toEqual({ first: 5, second: 11 })
      expect(total).toBe(23)
    }))

  it.effect("leave the spans themselves as they were: names, parents and end times", () =>
    Effect.gen(function*() {
      const { outer, inner } = yield* withStageTimings(new Set(["outer"]), () =>
        Effect.gen(function*() {
          const inner = yield* Effect.currentSpan.pipe(Effect.withSpan("inner"))
          return { outer: yield* Effect.currentSpan, inner }
        }).pipe(Effect.withSpan("outer")))
      expect(outer.name).toBe("outer")
      expect(inner._tag === "Span" && inner.parent._tag === "Some" ? inner.parent.value.spanId : undefined).toBe(outer.spanId)
      expect(outer.status._tag).toBe("Ended")
    }))
})
