import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { retryDelayMs } from "../../src/jobs/retryBackoff.ts"

const settings = { retryBaseMs: 1000, retryMaxMs: 60_000 }
const MIDDLE = 0.5

describe("the wait before a failed job's next attempt", () => {
  it("doubles with every failed attempt, from EXTRACTION_RETRY_BASE_MS up to EXTRACTION_RETRY_MAX_MS", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((attempts) => retryDelayMs(attempts, settings, MIDDLE))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000
    ])
  })

  it("is spread by at most 20 % either way, so jobs that failed together retry apart", () => {
    expect(retryDelayMs(3, settings, 0)).toBe(3200)
    expect(retryDelayMs(3, settings, 0.999_999)).toBe(4800)
    expect(retryDelayMs(3, settings, 0.25)).not.toBe(retryDelayMs(3, settings, 0.75))
  })

  it("stays within the spread of its doubling step, and never grows past the maximum's", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 100_000 }),
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempts, retryBaseMs, retryMaxMs, jitter) => {
          const step = Math.min(retryMaxMs, retryBaseMs * 2 ** (attempts - 1))
          const delay = retryDelayMs(attempts, { retryBaseMs, retryMaxMs }, jitter)
          expect(Number.isInteger(delay)).toBe(true)
          expect(delay).toBeGreaterThanOrEqual(Math.floor(step * 0.8))
          expect(delay).toBeLessThanOrEqual(Math.ceil(step * 1.2))
          expect(delay).toBeLessThanOrEqual(Math.ceil(retryMaxMs * 1.2))
        }
      )
    )
  })

  it("never shortens with a further failure (for the same draw)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempts, jitter) => {
          expect(retryDelayMs(attempts + 1, settings, jitter)).toBeGreaterThanOrEqual(
            retryDelayMs(attempts, settings, jitter)
          )
        }
      )
    )
  })
})
