/**
 * The ranking direction of the model, fitted to rank: for each question, the softmax over its
 * candidate memories should put its mass on the answers,
 *
 *   loss = Σ_questions weight × (log Σ_all e^{w·x} − log Σ_answers e^{w·x}) + ½ l2 |w|²
 *
 * minimised by Newton steps (the Hessian of the first term, which is positive semi-definite; the
 * second term's is left out, which only makes the steps more cautious) with a line search, some
 * coefficients held non-negative. Features constant within a question cancel out: the calibration
 * (`logistic.ts`) places them.
 */
import { projectedNewtonStep } from "./newton.ts"
export interface Groups {
  /** Row-major, `features` values per row. */
  readonly x: Float64Array
  readonly answer: Uint8Array
  /** Row index where each question's rows start; the last entry is the row count. */
  readonly starts: ReadonlyArray<number>
  readonly groupWeight: Float64Array
  readonly features: number
}

export const fitListwise = (
  groups: Groups,
  options: { readonly nonNegative: ReadonlyArray<boolean>; readonly l2: number; readonly maxIterations?: number }
): { readonly coefficients: ReadonlyArray<number>; readonly loss: number; readonly iterations: number } => {
  const d = groups.features
  const w = new Float64Array(d)
  const { x, answer, starts, groupWeight } = groups
  const count = starts.length - 1
  let total = 0
  for (let g = 0; g < count; g++) total += groupWeight[g]!

  const scoresOf = (params: Float64Array, from: number, to: number) => {
    const s = new Float64Array(to - from)
    for (let i = from; i < to; i++) {
      let t = 0
      for (let j = 0; j < d; j++) t += params[j]! * x[i * d + j]!
      s[i - from] = t
    }
    return s
  }
  const logSumExp = (s: Float64Array, pick: (i: number) => boolean) => {
    let max = -Infinity
    for (let i = 0; i < s.length; i++) if (pick(i)) max = Math.max(max, s[i]!)
    let sum = 0
    for (let i = 0; i < s.length; i++) if (pick(i)) sum += Math.exp(s[i]! - max)
    return max + Math.log(sum)
  }
  const lossOf = (params: Float64Array) => {
    let loss = 0
    for (let g = 0; g < count; g++) {
      const from = starts[g]!
      const s = scoresOf(params, from, starts[g + 1]!)
      loss += groupWeight[g]! * (logSumExp(s, () => true) - logSumExp(s, (i) => answer[from + i] === 1))
    }
    let penalty = 0
    for (let j = 0; j < d; j++) penalty += params[j]! * params[j]!
    return loss / total + 0.5 * options.l2 * penalty
  }

  let loss = lossOf(w)
  let iterations = 0
  for (; iterations < (options.maxIterations ?? 60); iterations++) {
    const gradient = new Float64Array(d)
    const hessian = new Float64Array(d * d)
    for (let g = 0; g < count; g++) {
      const from = starts[g]!
      const to = starts[g + 1]!
      const s = scoresOf(w, from, to)
      const all = logSumExp(s, () => true)
      const answers = logSumExp(s, (i) => answer[from + i] === 1)
      const mean = new Float64Array(d)
      const scale = groupWeight[g]! / total
      for (let i = from; i < to; i++) {
        const q = Math.exp(s[i - from]! - all)
        const r = answer[i] === 1 ? Math.exp(s[i - from]! - answers) : 0
        for (let j = 0; j < d; j++) {
          const value = x[i * d + j]!
          gradient[j]! += scale * (q - r) * value
          mean[j]! += q * value
        }
      }
      for (let i = from; i < to; i++) {
        const q = Math.exp(s[i - from]! - all)
        if (q < 1e-12) continue
        for (let j = 0; j < d; j++) {
          const a = x[i * d + j]! - mean[j]!
          if (a === 0) continue
          for (let k = 0; k <= j; k++) hessian[j * d + k]! += scale * q * a * (x[i * d + k]! - mean[k]!)
        }
      }
    }
    for (let j = 0; j < d; j++) for (let k = 0; k < j; k++) hessian[k * d + j] = hessian[j * d + k]!
    for (let j = 0; j < d; j++) {
      gradient[j]! += options.l2 * w[j]!
      hessian[j * d + j]! += options.l2 + 1e-9
    }
    const free = Array.from({ length: d }, (_, j) => !(options.nonNegative[j] && w[j]! <= 0 && gradient[j]! > 0))
    const index = free.flatMap((f, j) => (f ? [j] : []))
    const next = projectedNewtonStep(w, gradient, hessian, index, (j) => options.nonNegative[j] === true, lossOf, loss)
    const improvement = loss - next.loss
    w.set(next.params)
    loss = next.loss
    if (improvement < 1e-9) break
  }
  return { coefficients: Array.from(w), loss, iterations }
}
