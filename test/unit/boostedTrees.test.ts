import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { fitBoostedTrees } from "../../bench/ranking/boosting.ts"
import { boostedTreesOf, correctionOf } from "../../src/retrieval/boostedTrees.ts"

describe("the trees that rescore the first memories", () => {
  it("send a value at or below the threshold left, and read the linear logit after the features", () => {
    // Depth 1: the root splits on input 2 (after two features: the linear logit).
    const trees = boostedTreesOf({
      depth: 1,
      trees: [{ feature: [2, -1, -1], threshold: [0, 0, 0], value: [0, -1, 1] }]
    })
    const features = Float64Array.of(0.3, 0.7)
    expect(correctionOf(trees, features, -0.5)).toBe(-1)
    expect(correctionOf(trees, features, 0)).toBe(-1)
    expect(correctionOf(trees, features, 0.5)).toBe(1)
  })

  it("stop at a leaf above the full depth", () => {
    // Depth 2, the root's left child a leaf: its children are never read.
    const trees = boostedTreesOf({
      depth: 2,
      trees: [
        {
          feature: [0, -1, 1, -1, -1, -1, -1],
          threshold: [0.5, 0, 0.5, 0, 0, 0, 0],
          value: [0, -2, 0, 9, 9, 3, 4]
        }
      ]
    })
    expect(correctionOf(trees, Float64Array.of(0.2, 0.9), 0)).toBe(-2)
    expect(correctionOf(trees, Float64Array.of(0.8, 0.2), 0)).toBe(3)
    expect(correctionOf(trees, Float64Array.of(0.8, 0.9), 0)).toBe(4)
  })
})

/** Two inputs that answer only together, and a third the answer falls with. */
const samplesOf = (count: number) => {
  let seed = 7
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
  const inputs = 3
  const x = new Float64Array(count * inputs)
  const y = new Uint8Array(count)
  for (let i = 0; i < count; i++) {
    const [a, b, c] = [random(), random(), random()]
    x.set([a, b, c], i * inputs)
    y[i] = a > 0.5 && b > 0.5 && c < 0.7 ? 1 : 0
  }
  return { x, y, weight: new Float64Array(count).fill(1), base: new Float64Array(count), count, inputs }
}

describe("gradient boosting from the linear logit", () => {
  const settings = { trees: 60, depth: 2, learningRate: 0.3, minLeafSamples: 20 }
  const score = (trees: ReturnType<typeof boostedTreesOf>, a: number, b: number, c: number) =>
    correctionOf(trees, Float64Array.of(a, b, c), 0)

  it("learns what two signals do together that neither does alone", () => {
    const trees = boostedTreesOf(fitBoostedTrees(samplesOf(4000), { ...settings, increasing: [] }))
    const both = score(trees, 0.9, 0.9, 0.1)
    expect(both).toBeGreaterThan(score(trees, 0.9, 0.1, 0.1) + 2)
    expect(both).toBeGreaterThan(score(trees, 0.1, 0.9, 0.1) + 2)
    expect(both).toBeGreaterThan(score(trees, 0.9, 0.9, 0.9) + 2)
  })

  it("never lowers the output as an input marked increasing grows", () => {
    const trees = boostedTreesOf(fitBoostedTrees(samplesOf(4000), { ...settings, increasing: [false, false, true] }))
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (a, b, c, more) => {
          expect(score(trees, a, b, Math.min(1, c + more))).toBeGreaterThanOrEqual(score(trees, a, b, c) - 1e-12)
        }
      )
    )
  })
})
