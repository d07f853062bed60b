/**
 * The trees that rescore the linear ranking's first memories (`src/retrieval/boostedTrees.ts`):
 * fitted per mode on the tuning questions' first `RERANK_DEPTH` rows, from the linear logit, and
 * cross-validated over the tuning conversations of LoCoMo (`npm run fit:ranking -- --cv`).
 */
import {
  type BoostedTrees,
  type BoostedTreesFile,
  boostedTreesOf,
  correctionOf,
  RERANK_DEPTH
} from "../../src/retrieval/boostedTrees.ts"
import { FEATURE_COUNT, FEATURES, type FeatureName } from "../../src/retrieval/featureSet.ts"
import { fitBoostedTrees } from "./boosting.ts"
import { balancedByDataset, type EvalCase } from "./corpus.ts"

export const TREE_SETTINGS = { trees: 100, depth: 3, learningRate: 0.05, minLeafSamples: 50 }

/**
 * The inputs the trees may only raise a memory for: importance and recency, as in the linear
 * weights. The relevance signals are free in the trees (a keyword match can count for less when
 * the other speaker said it); their linear weights stay non-negative.
 */
const INCREASING: ReadonlySet<FeatureName> = new Set(["importance", "recency"])

/** The rows the trees rescore: the first `RERANK_DEPTH` by the linear logit. */
export const rerankedRows = (logits: Float64Array): ReadonlyArray<number> =>
  Array.from({ length: logits.length }, (_, i) => i)
    .sort((a, b) => logits[b]! - logits[a]!)
    .slice(0, RERANK_DEPTH)

/** Every row's logit after the trees (`features` row-major, `FEATURE_COUNT` per row). */
export const rerankedLogits = (logits: Float64Array, features: Float64Array, trees: BoostedTrees): Float64Array => {
  const out = Float64Array.from(logits)
  for (const row of rerankedRows(logits))
    out[row]! += correctionOf(trees, features.subarray(row * FEATURE_COUNT, (row + 1) * FEATURE_COUNT), logits[row]!)
  return out
}

export interface CaseInputs {
  readonly linear: (c: EvalCase) => Float64Array
  readonly features: (c: EvalCase) => Float64Array
}

/** Trees fitted on the cases' reranked rows, each dataset weighing the same. */
export const fitRerankTrees = (list: ReadonlyArray<EvalCase>, inputsOf: CaseInputs): BoostedTreesFile => {
  const inputs = FEATURE_COUNT + 1
  const picked = list.map((c) => {
    const logits = inputsOf.linear(c)
    return { c, logits, rows: rerankedRows(logits) }
  })
  const { count, weightOf } = balancedByDataset(picked)
  const x = new Float64Array(count * inputs)
  const y = new Uint8Array(count)
  const weight = new Float64Array(count)
  const base = new Float64Array(count)
  let at = 0
  for (const { c, logits, rows } of picked) {
    const f = inputsOf.features(c)
    for (const row of rows) {
      x.set(f.subarray(row * FEATURE_COUNT, (row + 1) * FEATURE_COUNT), at * inputs)
      x[at * inputs + FEATURE_COUNT] = logits[row]!
      y[at] = c.answers.has(row) ? 1 : 0
      weight[at] = weightOf(c)
      base[at] = logits[row]!
      at++
    }
  }
  return fitBoostedTrees(
    { x, y, weight, base, count, inputs },
    { ...TREE_SETTINGS, increasing: [...FEATURES.map((name) => INCREASING.has(name)), false] }
  )
}

/**
 * Recall@5 per category of each tuning LoCoMo conversation, ranked by the linear logit alone and with
 * trees fitted without it (the linear weights are fitted on all of them: the trees' figures are the
 * fair ones, the linear ones a little flattering).
 */
export const crossValidate = (tune: ReadonlyArray<EvalCase>, inputsOf: CaseInputs, log: (line: string) => void) => {
  const conversationOf = (c: EvalCase) => /^locomo-(\d+)-/.exec(c.profile.name)?.[1]
  const folds = [...new Set(tune.flatMap((c) => conversationOf(c) ?? []))]
  const hits = new Map<string, { linear: number; trees: number; n: number }>()
  const inTop5 = (c: EvalCase, logits: Float64Array) =>
    rerankedRows(logits)
      .slice(0, 5)
      .some((row) => c.answers.has(row))
  for (const fold of folds) {
    const trees = boostedTreesOf(
      fitRerankTrees(
        tune.filter((c) => conversationOf(c) !== fold),
        inputsOf
      )
    )
    for (const c of tune) {
      if (conversationOf(c) !== fold || c.subset || c.answers.size === 0) continue
      const linear = inputsOf.linear(c)
      const withTrees = rerankedLogits(linear, inputsOf.features(c), trees)
      for (const key of [c.category, "ALL"]) {
        const h = hits.get(key) ?? { linear: 0, trees: 0, n: 0 }
        hits.set(key, {
          linear: h.linear + (inTop5(c, linear) ? 1 : 0),
          trees: h.trees + (inTop5(c, withTrees) ? 1 : 0),
          n: h.n + 1
        })
      }
    }
  }
  log("| LoCoMo tune, by conversation left out | n | R@5 linear | R@5 with trees |")
  log("|---|---|---|---|")
  for (const [key, h] of [...hits].sort(([a], [b]) => a.localeCompare(b)))
    log(`| ${key} | ${h.n} | ${((100 * h.linear) / h.n).toFixed(1)}% | ${((100 * h.trees) / h.n).toFixed(1)}% |`)
}
