/**
 * One step of projected Newton's method for the fits in this folder: the parameters in `free` move
 * by the Newton step of the gradient and Hessian (p × p, row-major), halved until the loss does not
 * grow, those in `nonNegative` clipped at 0. Returns the new parameters and their loss.
 */
export const projectedNewtonStep = (
  params: Float64Array,
  gradient: Float64Array,
  hessian: Float64Array,
  free: ReadonlyArray<number>,
  nonNegative: (j: number) => boolean,
  lossOf: (params: Float64Array) => number,
  loss: number
): { readonly params: Float64Array; readonly loss: number } => {
  const p = params.length
  const n = free.length
  const subHessian = new Float64Array(n * n)
  const subGradient = new Float64Array(n)
  free.forEach((j, a) => {
    subGradient[a] = gradient[j]!
    free.forEach((k, b) => (subHessian[a * n + b] = hessian[j * p + k]! + (a === b ? 1e-9 : 0)))
  })
  const step = solveSpd(subHessian, subGradient, n)
  for (let scale = 1, tries = 0; tries < 30; tries++, scale /= 2) {
    const candidate = Float64Array.from(params)
    free.forEach((j, a) => {
      candidate[j] = params[j]! - scale * step[a]!
      if (nonNegative(j) && candidate[j]! < 0) candidate[j] = 0
    })
    const candidateLoss = lossOf(candidate)
    if (candidateLoss <= loss) return { params: candidate, loss: candidateLoss }
  }
  return { params, loss }
}

/** Solves A x = b for a symmetric positive definite A (Cholesky); A is n×n row-major. */
const solveSpd = (a: Float64Array, b: Float64Array, n: number): Float64Array => {
  const l = new Float64Array(n * n)
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let sum = a[i * n + j]!
      for (let k = 0; k < j; k++) sum -= l[i * n + k]! * l[j * n + k]!
      l[i * n + j] = i === j ? Math.sqrt(Math.max(sum, 1e-12)) : sum / l[j * n + j]!
    }
  }
  const z = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    let sum = b[i]!
    for (let k = 0; k < i; k++) sum -= l[i * n + k]! * z[k]!
    z[i] = sum / l[i * n + i]!
  }
  const x = new Float64Array(n)
  for (let i = n - 1; i >= 0; i--) {
    let sum = z[i]!
    for (let k = i + 1; k < n; k++) sum -= l[k * n + i]! * x[k]!
    x[i] = sum / l[i * n + i]!
  }
  return x
}
