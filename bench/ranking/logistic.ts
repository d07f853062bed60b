/**
 * Weighted logistic regression by Newton's method, with some coefficients held non-negative (an
 * active set: a coefficient that would go below 0 is fixed at 0 while the gradient pushes it down)
 * and a small L2 penalty on the coefficients (not the intercept). Small dense problems only: the
 * Hessian is features × features.
 */
import { projectedNewtonStep } from "./newton.ts"
export interface Samples {
  /** Row-major, `features` values per sample. */
  readonly x: Float64Array
  readonly y: Uint8Array
  readonly weight: Float64Array
  /** Added to each sample's logit (a fixed part of the model), if given. */
  readonly offset?: Float64Array
  readonly count: number
  readonly features: number
}

export interface Fitted {
  readonly intercept: number
  readonly coefficients: ReadonlyArray<number>
  readonly iterations: number
  readonly logLoss: number
}

const sigmoid = (t: number) => (t >= 0 ? 1 / (1 + Math.exp(-t)) : Math.exp(t) / (1 + Math.exp(t)))

export const fitLogistic = (
  samples: Samples,
  options: {
    readonly nonNegative: ReadonlyArray<boolean>
    readonly l2: number
    readonly maxIterations?: number
    /** Coefficients held at 0 (not fitted). */
    readonly fixed?: ReadonlyArray<boolean>
    /** Fit the intercept too (default: yes). */
    readonly intercept?: boolean
  }
): Fitted => {
  const d = samples.features
  const p = d + 1 // the intercept is the last parameter
  const theta = new Float64Array(p)
  const { x, y, weight, count } = samples
  let totalWeight = 0
  for (let i = 0; i < count; i++) totalWeight += weight[i]!

  const lossOf = (params: Float64Array) => {
    let loss = 0
    for (let i = 0; i < count; i++) {
      let t = params[d]! + (samples.offset?.[i] ?? 0)
      for (let j = 0; j < d; j++) t += params[j]! * x[i * d + j]!
      // log(1 + e^t) − y t, stably
      const softplus = t > 0 ? t + Math.log1p(Math.exp(-t)) : Math.log1p(Math.exp(t))
      loss += weight[i]! * (softplus - y[i]! * t)
    }
    let penalty = 0
    for (let j = 0; j < d; j++) penalty += params[j]! * params[j]!
    return loss / totalWeight + 0.5 * options.l2 * penalty
  }

  let iterations = 0
  let loss = lossOf(theta)
  for (; iterations < (options.maxIterations ?? 50); iterations++) {
    const gradient = new Float64Array(p)
    const hessian = new Float64Array(p * p)
    const row = new Float64Array(p)
    for (let i = 0; i < count; i++) {
      let t = theta[d]! + (samples.offset?.[i] ?? 0)
      for (let j = 0; j < d; j++) {
        row[j] = x[i * d + j]!
        t += theta[j]! * row[j]!
      }
      row[d] = 1
      const q = sigmoid(t)
      const w = weight[i]! / totalWeight
      const residual = w * (q - y[i]!)
      const curvature = w * q * (1 - q)
      for (let j = 0; j < p; j++) {
        if (row[j] === 0) continue
        gradient[j]! += residual * row[j]!
        for (let k = 0; k <= j; k++) hessian[j * p + k]! += curvature * row[j]! * row[k]!
      }
    }
    for (let j = 0; j < p; j++) for (let k = 0; k < j; k++) hessian[k * p + j] = hessian[j * p + k]!
    for (let j = 0; j < d; j++) {
      gradient[j]! += options.l2 * theta[j]!
      hessian[j * p + j]! += options.l2
    }
    // Active set: a non-negative coefficient at 0 whose gradient pushes it below stays out of the step.
    const free = Array.from({ length: p }, (_, j) =>
      j === d
        ? options.intercept !== false
        : !(options.fixed?.[j] === true || (options.nonNegative[j] && theta[j]! <= 0 && gradient[j]! > 0))
    )
    const index = free.flatMap((f, j) => (f ? [j] : []))
    const next = projectedNewtonStep(
      theta,
      gradient,
      hessian,
      index,
      (j) => j < d && options.nonNegative[j] === true,
      lossOf,
      loss
    )
    const improvement = loss - next.loss
    theta.set(next.params)
    loss = next.loss
    if (improvement < 1e-10) break
  }
  return { intercept: theta[d]!, coefficients: Array.from(theta.subarray(0, d)), iterations, logLoss: loss }
}
