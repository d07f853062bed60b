import { describe, expect, it } from "@effect/vitest"
import { DAY_MS, decayFactorOf, FRESHNESS_MOMENTS, type MemoryHalfLives } from "../../src/domain/memoryDecay.ts"

/** A different half-life for every type, so a type read as another one shows (the SQL twin: test/memory-decay.test.ts). */
const halfLives: MemoryHalfLives = { fact: 365, preference: 180, event: 30, context: 7 }

describe("decayFactorOf", () => {
  const memory = { type: "event" as const, decayBase: 0.8, createdAt: 0, lastAccessedAt: null, reinforcedAt: null }

  it("halves the base factor every half-life of the type since the memory was last fresh", () => {
    expect(decayFactorOf(memory, halfLives, 30 * DAY_MS)).toBeCloseTo(0.4, 12)
    expect(decayFactorOf(memory, halfLives, 60 * DAY_MS)).toBeCloseTo(0.2, 12)
    expect(
      decayFactorOf({ ...memory, lastAccessedAt: 20 * DAY_MS, reinforcedAt: 30 * DAY_MS }, halfLives, 60 * DAY_MS)
    ).toBeCloseTo(0.4, 12)
  })

  it("counts every moment of FRESHNESS_MOMENTS (the list the SQL twin renders)", () => {
    for (const moment of FRESHNESS_MOMENTS) {
      const fresh = { ...memory, [moment]: 30 * DAY_MS }
      expect(decayFactorOf(fresh, halfLives, 60 * DAY_MS), moment).toBeCloseTo(0.4, 12)
    }
  })
})
