import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { requestStage, StageTimings } from "../../src/observability/requestSpan.ts"
import { currentSpanStart, millisSince } from "../../src/pipeline/stageTimings.ts"

/** A stage that takes `millis` on the test clock. */
const stage = (name: string, millis: number) => TestClock.adjust(`${millis} millis`).pipe(requestStage(name))

describe("stage timings", () => {
  it.effect("are the durations of the request's stages, by name, noted as each ends", () =>
    Effect.gen(function* () {
      const timings = new Map<string, number>()
      const total = yield* Effect.gen(function* () {
        const started = yield* currentSpanStart
        yield* stage("first", 5)
        yield* TestClock.adjust("7 millis")
        yield* stage("second", 11)
        return yield* millisSince(started)
      }).pipe(Effect.withSpan("request"), Effect.provideService(StageTimings, timings))
      expect(Object.fromEntries(timings)).toEqual({ first: 5, second: 11 })
      expect(total).toBe(23)
    })
  )

  it.effect("belong to the request that ran them", () =>
    Effect.gen(function* () {
      // Two requests at once, each with a stage that waits as long as it is told.
      const request = (millis: number) => {
        const timings = new Map<string, number>()
        return Effect.sleep(`${millis} millis`).pipe(
          requestStage("stage"),
          Effect.provideService(StageTimings, timings),
          Effect.as(timings)
        )
      }
      const both = yield* Effect.all([request(3), request(5)], { concurrency: 2 }).pipe(Effect.forkChild)
      yield* TestClock.adjust("10 millis")
      const [first, second] = yield* Fiber.join(both)
      expect(Object.fromEntries(first)).toEqual({ stage: 3 })
      expect(Object.fromEntries(second)).toEqual({ stage: 5 })
    })
  )

  it.effect("are the stages' spans: named, under the request's span", () =>
    Effect.gen(function* () {
      const { outer, inner } = yield* Effect.gen(function* () {
        const inner = yield* Effect.currentSpan.pipe(requestStage("inner"))
        return { outer: yield* Effect.currentSpan, inner }
      }).pipe(Effect.withSpan("outer"))
      expect(inner.name).toBe("inner")
      expect(inner.parent._tag === "Some" ? inner.parent.value.spanId : undefined).toBe(outer.spanId)
    })
  )

  it.effect("are not kept outside a request", () =>
    Effect.gen(function* () {
      expect(yield* stage("alone", 1).pipe(Effect.as("ran"))).toBe("ran")
      expect(yield* StageTimings).toBeUndefined()
    })
  )
})
