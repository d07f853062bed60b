/**
 * Gradient boosting of regression trees for the logistic loss, starting from a given logit per sample
 * (the linear model's): each tree is grown level by level to `depth` on the residuals y − p, splitting
 * where the two sides' mean residuals differ most (Friedman's criterion, exact thresholds), each leaf
 * worth a Newton step Σ w(y − p) / Σ w p(1 − p), times the learning rate. A feature marked increasing
 * never lowers the output as it grows (bounds passed down the tree): a stronger signal cannot count
 * against a memory. Writes the layout `src/retrieval/boostedTrees.ts` reads.
 */
import type { BoostedTreesFile } from "../../src/retrieval/boostedTrees.ts"

export interface BoostingSamples {
  /** Row-major, `inputs` values per sample. */
  readonly x: Float64Array
  readonly y: Uint8Array
  readonly weight: Float64Array
  /** Each sample's logit before the trees. */
  readonly base: Float64Array
  readonly count: number
  readonly inputs: number
}

export interface BoostingOptions {
  readonly trees: number
  readonly depth: number
  readonly learningRate: number
  /** Samples each side of a split must keep. */
  readonly minLeafSamples: number
  /** Per input: the output may only grow with it. */
  readonly increasing: ReadonlyArray<boolean>
}

const sigmoid = (t: number) => (t >= 0 ? 1 / (1 + Math.exp(-t)) : Math.exp(t) / (1 + Math.exp(t)))

export const fitBoostedTrees = (samples: BoostingSamples, options: BoostingOptions): BoostedTreesFile => {
  const { x, y, weight, count, inputs } = samples
  const { depth, learningRate, minLeafSamples, increasing } = options
  const nodes = 2 ** (depth + 1) - 1
  const sorted = Array.from({ length: inputs }, (_, f) =>
    Int32Array.from({ length: count }, (_, i) => i).sort((a, b) => x[a * inputs + f]! - x[b * inputs + f]!)
  )
  const logit = Float64Array.from(samples.base)
  const residual = new Float64Array(count)
  const hessian = new Float64Array(count)
  const nodeOf = new Int32Array(count)
  const trees: Array<{ feature: Array<number>; threshold: Array<number>; value: Array<number> }> = []

  for (let t = 0; t < options.trees; t++) {
    for (let i = 0; i < count; i++) {
      const p = sigmoid(logit[i]!)
      residual[i] = y[i]! - p
      hessian[i] = p * (1 - p)
    }
    nodeOf.fill(0)
    const feature = new Array<number>(nodes).fill(-1)
    const threshold = new Array<number>(nodes).fill(0)
    const value = new Array<number>(nodes).fill(0)
    const lower = new Float64Array(nodes).fill(-Infinity)
    const upper = new Float64Array(nodes).fill(Infinity)
    // Per node: Σw, Σw·r, Σw·h, samples.
    const W = new Float64Array(nodes)
    const R = new Float64Array(nodes)
    const H = new Float64Array(nodes)
    const N = new Int32Array(nodes)
    const stepOf = (n: number, r: number, h: number) => Math.min(upper[n]!, Math.max(lower[n]!, r / (h + 1e-12)))

    for (let level = 0; level <= depth; level++) {
      const first = 2 ** level - 1
      const last = 2 ** (level + 1) - 1
      W.fill(0)
      R.fill(0)
      H.fill(0)
      N.fill(0)
      for (let i = 0; i < count; i++) {
        const n = nodeOf[i]!
        W[n]! += weight[i]!
        R[n]! += weight[i]! * residual[i]!
        H[n]! += weight[i]! * hessian[i]!
        N[n]!++
      }
      for (let n = first; n < last; n++) value[n] = stepOf(n, R[n]!, H[n]!)
      if (level === depth) break
      const best = Array.from({ length: last - first }, () => ({ gain: 0, f: -1, at: 0, left: 0, right: 0 }))
      const lw = new Float64Array(nodes)
      const lr = new Float64Array(nodes)
      const lh = new Float64Array(nodes)
      const ln = new Int32Array(nodes)
      const lastValue = new Float64Array(nodes)
      for (let f = 0; f < inputs; f++) {
        lw.fill(0)
        lr.fill(0)
        lh.fill(0)
        ln.fill(0)
        for (const i of sorted[f]!) {
          const n = nodeOf[i]!
          if (n < first || N[n]! < 2 * minLeafSamples) continue
          const v = x[i * inputs + f]!
          const nl = ln[n]!
          if (nl >= minLeafSamples && N[n]! - nl >= minLeafSamples && v !== lastValue[n]) {
            const wl = lw[n]!
            const wr = W[n]! - wl
            const diff = lr[n]! / wl - (R[n]! - lr[n]!) / wr
            const gain = ((wl * wr) / (wl + wr)) * diff * diff
            const b = best[n - first]!
            if (gain > b.gain) {
              const left = stepOf(n, lr[n]!, lh[n]!)
              const right = stepOf(n, R[n]! - lr[n]!, H[n]! - lh[n]!)
              if (!increasing[f] || left <= right) {
                b.gain = gain
                b.f = f
                b.at = (lastValue[n]! + v) / 2
                b.left = left
                b.right = right
              }
            }
          }
          lw[n]! += weight[i]!
          lr[n]! += weight[i]! * residual[i]!
          lh[n]! += weight[i]! * hessian[i]!
          ln[n]!++
          lastValue[n] = v
        }
      }
      let split = false
      best.forEach((b, k) => {
        const n = first + k
        if (b.f === -1) return
        split = true
        feature[n] = b.f
        threshold[n] = b.at
        const [l, r] = [2 * n + 1, 2 * n + 2]
        lower[l] = lower[r] = lower[n]!
        upper[l] = upper[r] = upper[n]!
        if (increasing[b.f]) {
          const mid = (b.left + b.right) / 2
          upper[l] = Math.min(upper[n]!, mid)
          lower[r] = Math.max(lower[n]!, mid)
        }
      })
      if (!split) break
      for (let i = 0; i < count; i++) {
        const n = nodeOf[i]!
        if (feature[n] !== -1) nodeOf[i] = x[i * inputs + feature[n]!]! <= threshold[n]! ? 2 * n + 1 : 2 * n + 2
      }
    }
    const scaled = value.map((v) => v * learningRate)
    for (let i = 0; i < count; i++) logit[i]! += scaled[nodeOf[i]!]!
    trees.push({ feature, threshold, value: scaled })
  }
  return { depth, trees }
}
