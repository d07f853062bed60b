/** Ranks the corpus' questions offline with the gateway's own features and model, and scores the rankings. */

import { cosineRows } from "../../src/embedding/vectors.ts"
import { FEATURE_COUNT } from "../../src/retrieval/featureSet.ts"
import { cutForInjection, lineTokens } from "../../src/retrieval/injectionCut.ts"
import { featuresOf, prepareQuery, type RankingQuery } from "../../src/retrieval/rankingFeatures.ts"
import { queryTermsOf } from "../../src/retrieval/terms.ts"
import { asksTime } from "../../src/retrieval/timeMentions.ts"
import { timeWindowOf } from "../../src/retrieval/timeWindow.ts"
import type { EvalCase } from "./corpus.ts"

export const FEATURE_SETTINGS = {
  halfLives: { fact: 365, preference: 180, event: 30, context: 60 },
  recencyHalfLifeDays: 30
}

export type Mode = "off" | "local"

/** Every row's features for a case, row-major. */
export const caseFeatures = (c: EvalCase, mode: Mode): Float64Array => {
  const { index, now } = c.profile
  const rows = index.memories.length
  let cosines: Float32Array | undefined
  if (mode === "local" && index.vectors !== undefined) {
    cosines = new Float32Array(rows)
    cosineRows(index.vectors, c.vector, 0, rows, cosines)
  }
  const query: RankingQuery = {
    terms: queryTermsOf(c.question),
    cosines,
    window: timeWindowOf(c.question, now),
    asksTime: asksTime(c.question)
  }
  const prepared = prepareQuery(index, query, now, FEATURE_SETTINGS)
  const out = new Float64Array(rows * FEATURE_COUNT)
  for (let row = 0; row < rows; row++)
    featuresOf(prepared, row, out.subarray(row * FEATURE_COUNT, (row + 1) * FEATURE_COUNT))
  return out
}

export interface Ranked {
  readonly c: EvalCase
  /** Rows best first, with their scores. */
  readonly order: ReadonlyArray<number>
  readonly scores: Float64Array
}

/** Rows by score, best first; ties by the newer memory. */
export const rankRows = (c: EvalCase, scores: Float64Array): Ranked => {
  const memories = c.profile.index.memories
  const order = Array.from({ length: scores.length }, (_, i) => i).sort(
    (a, b) => scores[b]! - scores[a]! || memories[b]!.createdAt - memories[a]!.createdAt
  )
  return { c, order, scores }
}

export interface Scores {
  readonly n: number
  readonly r1: number
  readonly r3: number
  readonly r5: number
  readonly r10: number
  readonly mrr: number
  /** An answer among the memories injection takes (`cutForInjection`). */
  readonly injectedAnswer: number
  /** Memories injection takes, on average. */
  readonly injectedPerQuestion: number
  /** Their estimated tokens per question that has an answer. */
  readonly tokensPerAnswered: number
  /** Changed facts: the newer value above the floor and ahead of every stale one. */
  readonly newerFirst: number
}

/** How injection cuts a ranking: the gateway's defaults (`INJECTION_TOKEN_BUDGET`, `INJECTION_MAX_MEMORIES`) and the model's floors. */
export interface Cut {
  readonly floor: number
  readonly relativeFloor: number
  readonly tokenBudget: number
  readonly maxMemories: number
}

/** The rows injection takes: `cutForInjection` over the first `maxMemories` relevant rows. */
export const injectedRows = (r: Ranked, cut: Cut): ReadonlyArray<number> => {
  const { memories } = r.c.profile.index
  const ranked = r.order.slice(0, cut.maxMemories).map((row) => {
    const score = r.scores[row]!
    return {
      memory: memories[row]!,
      row,
      score,
      relevant: score >= cut.floor,
      parts: { semantic: null, keyword: 0, relevance: score, time: 0, importance: 0, recency: 0 }
    }
  })
  return cutForInjection(ranked, cut).map((scored) => scored.row)
}

export const scoreRankings = (list: ReadonlyArray<Ranked>, cut: Cut): Scores => {
  const answerable = list.filter((r) => r.c.answers.size > 0)
  const n = answerable.length
  const firstAnswer = (r: Ranked, rows: ReadonlyArray<number>) => {
    const at = rows.findIndex((row) => r.c.answers.has(row))
    return at === -1 ? Infinity : at + 1
  }
  const injected = new Map(list.map((r) => [r, injectedRows(r, cut)]))
  const injectedOf = (r: Ranked) => injected.get(r)!
  const tokensOf = (r: Ranked) =>
    injectedOf(r).reduce((sum, row) => sum + lineTokens(r.c.profile.index.memories[row]!.content), 0)
  const share = (f: (r: Ranked) => boolean) => (n === 0 ? Number.NaN : answerable.filter(f).length / n)
  const rank = new Map(answerable.map((r) => [r, firstAnswer(r, r.order)]))
  return {
    n: list.length,
    r1: share((r) => rank.get(r)! <= 1),
    r3: share((r) => rank.get(r)! <= 3),
    r5: share((r) => rank.get(r)! <= 5),
    r10: share((r) => rank.get(r)! <= 10),
    mrr: n === 0 ? Number.NaN : answerable.reduce((sum, r) => sum + (rank.get(r)! <= 10 ? 1 / rank.get(r)! : 0), 0) / n,
    injectedAnswer: share((r) => firstAnswer(r, injectedOf(r)) !== Infinity),
    injectedPerQuestion:
      list.length === 0 ? Number.NaN : list.reduce((sum, r) => sum + injectedOf(r).length, 0) / list.length,
    tokensPerAnswered: n === 0 ? Number.NaN : answerable.reduce((sum, r) => sum + tokensOf(r), 0) / n,
    newerFirst: share((r) => {
      const injected = injectedOf(r)
      const answer = firstAnswer(r, injected)
      const stale = injected.findIndex((row) => r.c.stale.has(row))
      return answer !== Infinity && (stale === -1 || stale + 1 > answer)
    })
  }
}
