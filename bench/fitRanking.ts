/**
 * Fits the memory ranking (`npm run fit:ranking`): from the features of
 * `src/retrieval/rankingFeatures.ts` to the probability that a memory answers the message, once for
 * queries with a vector and once without, on the `tune` questions of the recall set and of LoCoMo
 * only (and smaller haystacks made from them). The direction is fitted to rank (listwise), then
 * scaled and placed by a logistic regression (the probability), trees fitted from that logit for the
 * first memories (`ranking/rerankTrees.ts`), and the floors chosen. Prints recall on both splits, and
 * for what the gateway does (`gateway`); writes the model to `src/retrieval/rankingModel.json` (with
 * `--write`). `--cv` cross-validates the trees over LoCoMo's tuning conversations instead.
 *
 *   npm run fit:ranking             # fit and print
 *   npm run fit:ranking -- --write  # … and write the model the gateway ships
 *   npm run fit:ranking -- --cv     # the trees fitted without each tuning conversation, judged on it
 */
import { writeFile } from "node:fs/promises"
import { join } from "node:path"
import { type BoostedTreesFile, boostedTreesOf, RERANK_DEPTH } from "../src/retrieval/boostedTrees.ts"
import { orderChangedFacts } from "../src/retrieval/changedFacts.ts"
import {
  CANDIDATE_FEATURES,
  FEATURE_COUNT,
  FEATURES,
  featureIndex,
  NON_NEGATIVE_FEATURES,
  QUERY_FEATURES
} from "../src/retrieval/featureSet.ts"
import { KEYWORDS_CONFIDENT } from "../src/retrieval/rankingModel.ts"
import { root } from "./processes.ts"
import { balancedByDataset, type EvalCase, loadCorpus } from "./ranking/corpus.ts"
import {
  type Cut,
  caseFeatures,
  type Mode,
  type Ranked,
  rankRows,
  type Scores,
  scoreRankings
} from "./ranking/evaluate.ts"
import { fitListwise, type Groups } from "./ranking/listwise.ts"
import { fitLogistic, type Samples } from "./ranking/logistic.ts"
import { crossValidate, fitRerankTrees, rerankedLogits, TREE_SETTINGS } from "./ranking/rerankTrees.ts"

const log = (line: string) => process.stdout.write(`${line}\n`)
const write = process.argv.includes("--write")
const L2 = 1e-4

log("fit:ranking: loading the labelled questions")
const cases = await loadCorpus(log)
const features = new Map<EvalCase, Record<Mode, Float64Array>>()
for (const c of cases) features.set(c, { off: caseFeatures(c, "off"), local: caseFeatures(c, "local") })

// The rows some signal reaches (a shared term, the first 50 by cosine, the named period, a matching neighbour):
// the model learns to order those; every other row is far below any floor.
const CANDIDATE_SIGNALS = CANDIDATE_FEATURES.map((name) => featureIndex[name])
const isCandidate = (f: Float64Array, row: number) => CANDIDATE_SIGNALS.some((j) => f[row * FEATURE_COUNT + j]! > 0)
/** The candidate rows of the questions as samples; each dataset weighs the same in all. */
const samplesOf = (list: ReadonlyArray<EvalCase>, mode: Mode): Samples => {
  const picked: Array<{ c: EvalCase; rows: Array<number> }> = list.map((c) => {
    const f = features.get(c)![mode]
    return {
      c,
      rows: Array.from({ length: c.profile.index.memories.length }, (_, i) => i).filter((row) => isCandidate(f, row))
    }
  })
  const { count, weightOf } = balancedByDataset(picked)
  const x = new Float64Array(count * FEATURE_COUNT)
  const y = new Uint8Array(count)
  const weight = new Float64Array(count)
  let at = 0
  for (const { c, rows } of picked) {
    const f = features.get(c)![mode]
    const w = weightOf(c)
    for (const row of rows) {
      x.set(f.subarray(row * FEATURE_COUNT, (row + 1) * FEATURE_COUNT), at * FEATURE_COUNT)
      y[at] = c.answers.has(row) ? 1 : 0
      weight[at] = w
      at++
    }
  }
  return { x, y, weight, count, features: FEATURE_COUNT }
}

const tune = cases.filter((c) => c.split === "tune")
const nonNegative = FEATURES.map((name) => NON_NEGATIVE_FEATURES.has(name))
const started = performance.now()
// 1. Per mode, the direction, fitted to rank (listwise; without a vector the semantic features are 0).
const groupsOf = (list: ReadonlyArray<EvalCase>, mode: Mode): Groups => {
  const picked = list
    .filter((c) => c.answers.size > 0)
    .map((c) => {
      const f = features.get(c)![mode]
      return {
        c,
        f,
        rows: Array.from({ length: c.profile.index.memories.length }, (_, i) => i).filter((row) => isCandidate(f, row))
      }
    })
    .filter((g) => g.rows.some((row) => g.c.answers.has(row)))
  const count = picked.reduce((sum, g) => sum + g.rows.length, 0)
  const groupsBy = new Map<string, number>()
  for (const g of picked) groupsBy.set(g.c.dataset, (groupsBy.get(g.c.dataset) ?? 0) + 1)
  const x = new Float64Array(count * FEATURE_COUNT)
  const answer = new Uint8Array(count)
  const starts: Array<number> = []
  const groupWeight = new Float64Array(picked.length)
  let at = 0
  picked.forEach(({ c, f, rows }, g) => {
    starts.push(at)
    groupWeight[g] = picked.length / groupsBy.size / groupsBy.get(c.dataset)!
    for (const row of rows) {
      x.set(f.subarray(row * FEATURE_COUNT, (row + 1) * FEATURE_COUNT), at * FEATURE_COUNT)
      answer[at] = c.answers.has(row) ? 1 : 0
      at++
    }
  })
  starts.push(at)
  return { x, answer, starts, groupWeight, features: FEATURE_COUNT }
}
const directions = {
  local: fitListwise(groupsOf(tune, "local"), { nonNegative, l2: L2 }),
  off: fitListwise(groupsOf(tune, "off"), { nonNegative, l2: L2 })
}

// 2. Calibration per mode: the probability from the direction's score and the features that are
// the same for the whole query (the profile's size, how well anything matches at all).
const queryColumns = FEATURES.flatMap((name, j) => (QUERY_FEATURES.has(name) ? [j] : []))
const calibrate = (mode: Mode) => {
  const direction = directions[mode]
  const samples = samplesOf(tune, mode)
  const width = 1 + queryColumns.length
  const x = new Float64Array(samples.count * width)
  for (let i = 0; i < samples.count; i++) {
    let t = 0
    for (let j = 0; j < FEATURE_COUNT; j++)
      if (!QUERY_FEATURES.has(FEATURES[j]!)) t += direction.coefficients[j]! * samples.x[i * FEATURE_COUNT + j]!
    x[i * width] = t
    queryColumns.forEach((j, k) => (x[i * width + 1 + k] = samples.x[i * FEATURE_COUNT + j]!))
  }
  const fit = fitLogistic(
    { ...samples, x, features: width },
    {
      nonNegative: [true, ...queryColumns.map((j) => NON_NEGATIVE_FEATURES.has(FEATURES[j]!))],
      l2: 0
    }
  )
  const [scale, ...query] = fit.coefficients as [number, ...Array<number>]
  return {
    intercept: fit.intercept,
    coefficients: FEATURES.map((_, j) => {
      const k = queryColumns.indexOf(j)
      return k === -1 ? scale * direction.coefficients[j]! : query[k]!
    }),
    iterations: fit.iterations,
    logLoss: fit.logLoss
  }
}
const withVectors = calibrate("local")
const keywordsOnly = calibrate("off")
log(
  `  fitted in ${((performance.now() - started) / 1000).toFixed(1)} s (listwise loss with vectors ${directions.local.loss.toFixed(4)}, without ${directions.off.loss.toFixed(4)})`
)
log(`  ${"".padEnd(18)} with vectors  keywords only`)
log(
  `  ${"intercept".padEnd(18)} ${withVectors.intercept.toFixed(3).padStart(12)}  ${keywordsOnly.intercept.toFixed(3).padStart(12)}`
)
FEATURES.forEach((name, j) =>
  log(
    `  ${name.padEnd(18)} ${withVectors.coefficients[j]!.toFixed(3).padStart(12)}  ${keywordsOnly.coefficients[j]!.toFixed(3).padStart(12)}`
  )
)

const logitsOf = (model: typeof withVectors, x: Float64Array, rows: number) => {
  const out = new Float64Array(rows)
  for (let row = 0; row < rows; row++) {
    let t = model.intercept
    for (let j = 0; j < FEATURE_COUNT; j++) t += model.coefficients[j]! * x[row * FEATURE_COUNT + j]!
    out[row] = t
  }
  return out
}
const linearLogits = (c: EvalCase, mode: Mode) =>
  logitsOf(mode === "local" ? withVectors : keywordsOnly, features.get(c)![mode], c.profile.index.memories.length)
const inputsOf = (mode: Mode) => ({
  linear: (c: EvalCase) => linearLogits(c, mode),
  features: (c: EvalCase) => features.get(c)![mode]
})
if (process.argv.includes("--cv")) {
  crossValidate(tune, inputsOf("local"), log)
  process.exit(0)
}
// 3. Per mode, trees that correct the linear logit where features act together, fitted from it on
// the rows it ranks first (tune only); their inputs are the features and the linear logit.
const treeStarted = performance.now()
const treeFiles = { local: fitRerankTrees(tune, inputsOf("local")), off: fitRerankTrees(tune, inputsOf("off")) }
const trees = { local: boostedTreesOf(treeFiles.local), off: boostedTreesOf(treeFiles.off) }
log(
  `  trees: ${TREE_SETTINGS.trees} of depth ${TREE_SETTINGS.depth} per mode, rescoring the first ${RERANK_DEPTH}, fitted in ${((performance.now() - treeStarted) / 1000).toFixed(1)} s`
)

const probabilities = (c: EvalCase, mode: Mode) =>
  rerankedLogits(linearLogits(c, mode), features.get(c)![mode], trees[mode]).map((t) => 1 / (1 + Math.exp(-t)))

const rankings: Record<Mode, Map<EvalCase, Ranked>> = { off: new Map(), local: new Map() }
/** As the gateway orders them: the first 20, the newer of two about one subject first (`changedFacts.ts`), then the rest. */
const withChangedFacts = (ranked: Ranked, floor: number): Ranked => {
  const { index } = ranked.c.profile
  const top = ranked.order.slice(0, 20).map((row) => ({
    memory: index.memories[row]!,
    row,
    score: ranked.scores[row]!,
    parts: { semantic: null, keyword: 0, relevance: ranked.scores[row]!, time: 0, importance: 0, recency: 0 },
    relevant: ranked.scores[row]! >= floor
  }))
  return { ...ranked, order: [...orderChangedFacts(top, index).map((scored) => scored.row), ...ranked.order.slice(20)] }
}
for (const c of cases) {
  const off = probabilities(c, "off")
  rankings.off.set(c, rankRows(c, off))
  const local = rankRows(c, probabilities(c, "local"))
  // The floor reads the larger of the two: a keyword hit the keywords alone would inject stays injected.
  rankings.local.set(c, { ...local, scores: local.scores.map((p, row) => Math.max(p, off[row]!)) })
}

/** The gateway's defaults the cut is chosen for (`INJECTION_TOKEN_BUDGET`, `INJECTION_MAX_MEMORIES`). */
const TOKEN_BUDGET = 200
const MAX_MEMORIES = 10
/** What a token injected for an answered question costs, in share of answers injected: 100 tokens are worth 10 points. */
const TOKEN_COST = 1 / 1000
/**
 * Memories a question nothing answers may get on average, on the tuning profiles (about 330
 * memories): half of the one the gateway allows, as a bigger profile brings more (10,000 memories:
 * about three times as many).
 */
const NOTHING_ANSWERS_LIMIT = 0.5

/**
 * The floors (tune only): the probability a memory needs, and the share of the best memory's it must
 * reach, that inject the most answers for their tokens while questions nothing answers get at most
 * `NOTHING_ANSWERS_LIMIT` memories on average.
 */
const chooseCut = (): Cut => {
  const tuneLists = (["recall", "locomo"] as const).map((dataset) =>
    tune.filter((c) => c.dataset === dataset && !c.subset)
  )
  const tuneNone = tuneLists[0]!.filter((c) => c.answers.size === 0)
  let best = {
    cut: { floor: 0.5, relativeFloor: 0, tokenBudget: TOKEN_BUDGET, maxMemories: MAX_MEMORIES },
    value: -Infinity
  }
  for (let floor = 0.005; floor < 0.3; floor += 0.005) {
    for (let relativeFloor = 0; relativeFloor <= 0.5; relativeFloor += 0.05) {
      const cut = { floor, relativeFloor, tokenBudget: TOKEN_BUDGET, maxMemories: MAX_MEMORIES }
      let value = 0
      for (const mode of ["off", "local"] as const) {
        const none = scoreRankings(
          tuneNone.map((c) => rankings[mode].get(c)!),
          cut
        )
        if (none.injectedPerQuestion > NOTHING_ANSWERS_LIMIT) value = -Infinity
        for (const list of tuneLists) {
          const all = scoreRankings(
            list.map((c) => rankings[mode].get(c)!),
            cut
          )
          if (list.length > 0) value += all.injectedAnswer - TOKEN_COST * all.tokensPerAnswered
        }
      }
      if (value > best.value) best = { cut, value }
    }
  }
  return best.cut
}
const cut = chooseCut()
const floor = cut.floor
log(`  relevance floor (probability): ${floor.toFixed(3)}, relative floor ${cut.relativeFloor.toFixed(2)} of the best`)
for (const mode of ["off", "local"] as const)
  for (const [c, ranked] of rankings[mode]) rankings[mode].set(c, withChangedFacts(ranked, floor))
/** What the gateway ranks with: the keywords alone when they are confident (`KEYWORDS_CONFIDENT`), else the vector too. */
const shown: Record<Mode | "gateway", Map<EvalCase, Ranked>> = { ...rankings, gateway: new Map() }
for (const c of cases) {
  const byKeywords = rankings.off.get(c)!
  shown.gateway.set(c, byKeywords.scores.some((p) => p >= KEYWORDS_CONFIDENT) ? byKeywords : rankings.local.get(c)!)
}

const pct = (n: number) => (Number.isFinite(n) ? `${(n * 100).toFixed(1)}%` : "–")
const table = (dataset: string, split: string, mode: Mode | "gateway") => {
  const list = cases.filter((c) => c.dataset === dataset && c.split === split && !c.subset)
  const categories = [...new Set(list.map((c) => c.category))].sort()
  const line = (name: string, s: Scores) =>
    `| ${name} | ${s.n} | ${pct(s.r1)} | ${pct(s.r3)} | ${pct(s.r5)} | ${pct(s.r10)} | ${s.mrr.toFixed(3)} | ${pct(s.injectedAnswer)} | ${s.injectedPerQuestion.toFixed(1)} | ${s.tokensPerAnswered.toFixed(0)} | ${pct(s.newerFirst)} |`
  for (const category of categories) {
    log(
      line(
        `${dataset} ${split} ${mode} ${category}`,
        scoreRankings(
          list.filter((c) => c.category === category).map((c) => shown[mode].get(c)!),
          cut
        )
      )
    )
  }
  log(
    line(
      `${dataset} ${split} ${mode} ALL`,
      scoreRankings(
        list.map((c) => shown[mode].get(c)!),
        cut
      )
    )
  )
}
log("| cases | n | R@1 | R@3 | R@5 | R@10 | MRR | answer injected | injected | tokens per answered | newer first |")
log("|---|---|---|---|---|---|---|---|---|---|---|")
for (const dataset of ["locomo", "recall"])
  for (const split of ["tune", "heldout"])
    for (const mode of ["off", "local", "gateway"] as const) table(dataset, split, mode)

if (write) {
  const rounded = (values: ReadonlyArray<number>) => values.map((v) => Number(v.toPrecision(7)))
  const coefficientsOf = (model: typeof withVectors, treeFile: BoostedTreesFile) => ({
    intercept: model.intercept,
    coefficients: Object.fromEntries(FEATURES.map((name, j) => [name, model.coefficients[j]!])),
    trees: {
      depth: treeFile.depth,
      trees: treeFile.trees.map((tree) => ({
        feature: tree.feature,
        threshold: rounded(tree.threshold),
        value: rounded(tree.value)
      }))
    }
  })
  const model = {
    version: 1,
    fittedOn: "tune splits: bench/recall/data (tune questions), LoCoMo conversations 26, 30, 41, 42, 43",
    embedding: "local",
    withVectors: coefficientsOf(withVectors, treeFiles.local),
    keywordsOnly: coefficientsOf(keywordsOnly, treeFiles.off),
    relevanceFloor: Number(floor.toFixed(3)),
    relativeFloor: Number(cut.relativeFloor.toFixed(2))
  }
  // A tree's arrays on one line each: the file stays readable where it matters, the coefficients.
  const text = JSON.stringify(model, null, 2).replace(
    /\[\s+([-\d.e+,\s]+?)\s+\]/g,
    (_, inner: string) => `[${inner.replace(/\s+/g, "")}]`
  )
  await writeFile(join(root, "src/retrieval/rankingModel.json"), `${text}\n`)
  log("  wrote src/retrieval/rankingModel.json")
}
