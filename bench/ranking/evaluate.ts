/** Ranks the corpus' questions offline with the gateway's own features and model, and scores the rankings. */

import { cosineRows } from "../../src/embedding/vectors.ts"
import { FEATURE_COUNT, featuresOf, prepareQuery, type RankingQuery } from "../../src/retrieval/rankingFeatures.ts"
import { queryTermsOf } from "../../src/retrieval/terms.ts"
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
  const query: RankingQuery = { terms: queryTermsOf(c.question), cosines, window: timeWindowOf(c.question, now) }
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
  /** An answer among the first three memories above the floor. */
  readonly injected3: number
  /** Memories above the floor among the first 10, on average. */
  readonly injectedPerQuestion: number
  /** Changed facts: the newer value above the floor and ahead of every stale one. */
  readonly newerFirst: number
}

export const scoreRankings = (list: ReadonlyArray<Ranked>, floor: number): Scores => {
  const answerable = list.filter((r) => r.c.answers.size > 0)
  const n = answerable.length
  const firstAnswer = (r: Ranked, rows: ReadonlyArray<number>) => {
    const at = rows.findIndex((row) => r.c.answers.has(row))
    return at === -1 ? Infinity : at + 1
  }
  const injectedOf = (r: Ranked) => r.order.slice(0, 10).filter((row) => r.scores[row]! >= floor)
  const share = (f: (r: Ranked) => boolean) => (n === 0 ? Number.NaN : answerable.filter(f).length / n)
  const rank = new Map(answerable.map((r) => [r, firstAnswer(r, r.order)]))
  return {
    n: list.length,
    r1: share((r) => rank.get(r)! <= 1),
    r3: share((r) => rank.get(r)! <= 3),
    r5: share((r) => rank.get(r)! <= 5),
    r10: share((r) => rank.get(r)! <= 10),
    mrr: n === 0 ? Number.NaN : answerable.reduce((sum, r) => sum + (rank.get(r)! <= 10 ? 1 / rank.get(r)! : 0), 0) / n,
    injected3: share((r) => firstAnswer(r, injectedOf(r)) <= 3),
    injectedPerQuestion:
      list.length === 0 ? Number.NaN : list.reduce((sum, r) => sum + injectedOf(r).length, 0) / list.length,
    newerFirst: share((r) => {
      const injected = injectedOf(r)
      const answer = firstAnswer(r, injected)
      const stale = injected.findIndex((row) => r.c.stale.has(row))
      return answer !== Infinity && (stale === -1 || stale + 1 > answer)
    })
  }
}
