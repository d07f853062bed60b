import { Schema } from "effect"

/**
 * Regression trees added to a scorer's logit (`rankingModel.ts`): what the weighted sum misses where
 * features act together ("the message asks when" with "the memory names a time", a strong keyword match
 * by the wrong speaker). Fitted by `npm run fit:ranking` as gradient boosting from the linear logit, on
 * the memories the linear model ranks first, and applied to those only (the first `RERANK_DEPTH`
 * candidates: a memory with no relevance signal whose weighted sum cannot reach the floor is not one).
 *
 * Each tree is stored whole to `depth`: node i splits on `feature[i]` (x ≤ threshold goes to 2i + 1,
 * else to 2i + 2) or, with feature −1, is a leaf worth `value[i]`. A tree reads the features in
 * `FEATURES` order and, after them, the linear logit.
 */
export const BoostedTreesFile = Schema.Struct({
  depth: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 6 })),
  /** Per tree, `2^(depth+1) − 1` nodes. */
  trees: Schema.Array(
    Schema.Struct({
      feature: Schema.Array(Schema.Int),
      threshold: Schema.Array(Schema.Finite),
      value: Schema.Array(Schema.Finite)
    })
  )
})
export type BoostedTreesFile = typeof BoostedTreesFile.Type

/** How many of the linear ranking's first memories the trees rescore. */
export const RERANK_DEPTH = 40

export interface BoostedTrees {
  readonly count: number
  readonly nodesPerTree: number
  readonly feature: Int16Array
  readonly threshold: Float64Array
  readonly value: Float64Array
}

export const NO_TREES: BoostedTrees = {
  count: 0,
  nodesPerTree: 1,
  feature: new Int16Array(0),
  threshold: new Float64Array(0),
  value: new Float64Array(0)
}

export const boostedTreesOf = (file: BoostedTreesFile | undefined): BoostedTrees => {
  if (file === undefined || file.trees.length === 0) return NO_TREES
  const nodesPerTree = 2 ** (file.depth + 1) - 1
  const count = file.trees.length
  const feature = new Int16Array(count * nodesPerTree).fill(-1)
  const threshold = new Float64Array(count * nodesPerTree)
  const value = new Float64Array(count * nodesPerTree)
  file.trees.forEach((tree, t) => {
    feature.set(tree.feature.slice(0, nodesPerTree), t * nodesPerTree)
    threshold.set(tree.threshold.slice(0, nodesPerTree), t * nodesPerTree)
    value.set(tree.value.slice(0, nodesPerTree), t * nodesPerTree)
    // The last level only holds leaves: a walk never leaves its tree.
    feature.fill(-1, t * nodesPerTree + 2 ** file.depth - 1, (t + 1) * nodesPerTree)
  })
  return { count, nodesPerTree, feature, threshold, value }
}

/** What the trees add to a memory's logit, from its features and its linear logit. */
export const correctionOf = (trees: BoostedTrees, features: Float64Array, linearLogit: number): number => {
  const { feature, threshold, value, nodesPerTree, count } = trees
  const inputs = features.length
  let sum = 0
  for (let t = 0, base = 0; t < count; t++, base += nodesPerTree) {
    let node = 0
    let f = feature[base]!
    while (f !== -1) {
      const x = f === inputs ? linearLogit : features[f]!
      node = x <= threshold[base + node]! ? 2 * node + 1 : 2 * node + 2
      f = feature[base + node]!
    }
    sum += value[base + node]!
  }
  return sum
}
