import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { exceedsJsonDepth } from "../../src/domain/jsonDepth.ts"

/** Depth by recursion, for values shallow enough to recurse over. */
const depthOf = (value: unknown): number =>
  typeof value !== "object" || value === null
    ? 0
    : 1 + Math.max(0, ...(Array.isArray(value) ? value : Object.values(value)).map(depthOf))

describe("exceedsJsonDepth", () => {
  it("counts the outermost array or object as level 1", () => {
    expect(exceedsJsonDepth(JSON.parse("[[1]]"), 2)).toBe(false)
    expect(exceedsJsonDepth(JSON.parse("[[[1]]]"), 2)).toBe(true)
    expect(exceedsJsonDepth(JSON.parse('{"a":{"b":"[[[[[["}}'), 2)).toBe(false)
    expect(exceedsJsonDepth("[[[[", 1)).toBe(false)
  })

  it("agrees with a recursive count (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 0, max: 7 }), (value, max) => {
        expect(exceedsJsonDepth(value, max)).toBe(depthOf(value) > max)
      }),
      { numRuns: 1000 }
    )
  })

  it("measures values far deeper than the stack allows", () => {
    const text = `${"[".repeat(200_000)}${"]".repeat(200_000)}`
    expect(exceedsJsonDepth(JSON.parse(text), 128)).toBe(true)
  })
})
