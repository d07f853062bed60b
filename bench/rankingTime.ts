/**
 * The ranking's own time on the request path (`npm run bench:ranking`): for every question of the
 * labelled profiles and of LoCoMo's conversations (each a new message), what `Retrieval` does for
 * injection — the message's terms, period and whether it asks when; the keyword ranking; with the
 * message's vector, its cosines to every memory and the ranking again; the changed facts and the
 * cut — timed in this process, without the model's inference (the vectors are the benchmark's cached
 * ones) and without HTTP. Each question is ranked three times and the last two are kept (the first
 * compiles the code).
 */

import { Schema } from "effect"
import { cosineRows } from "../src/embedding/vectors.ts"
import { orderChangedFacts } from "../src/retrieval/changedFacts.ts"
import { cutForInjection } from "../src/retrieval/injectionCut.ts"
import shippedModel from "../src/retrieval/rankingModel.json" with { type: "json" }
import { RankingModelFile, rankingModelOf } from "../src/retrieval/rankingModel.ts"
import { scoreMemories } from "../src/retrieval/scoreMemories.ts"
import { weightedTermsOf } from "../src/retrieval/terms.ts"
import { asksTime } from "../src/retrieval/timeMentions.ts"
import { timeWindowOf } from "../src/retrieval/timeWindow.ts"
import { median, percentile } from "./loader.ts"
import { type EvalCase, loadCorpus } from "./ranking/corpus.ts"
import { FEATURE_SETTINGS } from "./ranking/evaluate.ts"

const log = (line: string) => process.stdout.write(`${line}\n`)
const model = rankingModelOf(Schema.decodeUnknownSync(RankingModelFile)(shippedModel))
const settings = { model, features: FEATURE_SETTINGS }
const cut = { tokenBudget: 200, maxMemories: 10, relativeFloor: model.relativeFloor }

const rankOnce = (c: EvalCase, withVector: boolean) => {
  const { index, now } = c.profile
  const started = performance.now()
  const query = {
    terms: weightedTermsOf([{ text: c.question, weight: 1 }]),
    cosines: undefined as Float32Array | undefined,
    window: timeWindowOf(c.question, now),
    asksTime: asksTime(c.question)
  }
  const options = { limit: 2 * cut.maxMemories, relevantOnly: true }
  let ranked = scoreMemories(index, query, settings, now, options)
  if (withVector && index.vectors !== undefined) {
    const cosines = new Float32Array(index.memories.length)
    cosineRows(index.vectors, c.vector, 0, index.memories.length, cosines)
    ranked = scoreMemories(index, { ...query, cosines }, settings, now, options)
  }
  cutForInjection(orderChangedFacts(ranked, index).slice(0, cut.maxMemories), cut)
  return performance.now() - started
}

const cases = (await loadCorpus(log)).filter((c) => !c.subset)
const profiles = [...new Set(cases.map((c) => c.profile))].filter((p) => !p.name.includes("unmarked"))
log("| Profile | Memories | Questions | Keywords only p50 / p99 (ms) | With the message's vector p50 / p99 (ms) |")
log("|---|---|---|---|---|")
for (const profile of profiles.sort((a, b) => a.index.memories.length - b.index.memories.length)) {
  const questions = cases.filter((c) => c.profile === profile)
  const times = { keywords: [] as Array<number>, vector: [] as Array<number> }
  for (const round of [0, 1, 2])
    for (const c of questions) {
      const keywords = rankOnce(c, false)
      const vector = rankOnce(c, true)
      if (round === 0) continue
      times.keywords.push(keywords)
      times.vector.push(vector)
    }
  const cell = (list: ReadonlyArray<number>) => `${median(list).toFixed(2)} / ${percentile(list, 99).toFixed(2)}`
  log(
    `| ${profile.name} | ${profile.index.memories.length} | ${questions.length} | ${cell(times.keywords)} | ${cell(times.vector)} |`
  )
}
