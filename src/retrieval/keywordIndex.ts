import type { Terms } from "./terms.ts"

/** BM25's term-frequency saturation and length normalisation (the usual values). */
const K1 = 1.2
const B = 0.75

/**
 * An inverted index over one profile's memories, built when the profile is loaded: for each term,
 * the memories that contain it.
 */
export interface KeywordIndex {
  readonly documents: number
  readonly averageLength: number
  /** term → indexes of the memories that contain it */
  readonly postings: ReadonlyMap<string, ReadonlyArray<number>>
  readonly terms: ReadonlyArray<Terms>
}

export const buildKeywordIndex = (terms: ReadonlyArray<Terms>): KeywordIndex => {
  const postings = new Map<string, Array<number>>()
  let totalLength = 0
  terms.forEach((document, index) => {
    totalLength += document.length
    for (const term of document.counts.keys()) {
      const list = postings.get(term)
      if (list === undefined) postings.set(term, [index])
      else list.push(index)
    }
  })
  return {
    documents: terms.length,
    averageLength: terms.length === 0 ? 0 : totalLength / terms.length,
    postings,
    terms
  }
}

/** A query's terms weighed against one index. */
export interface KeywordQuery {
  readonly index: KeywordIndex
  /** term → its inverse document frequency (rarer terms say more), for the terms some memory contains */
  readonly weights: ReadonlyMap<string, number>
  /** What a memory of average length holding every query term once would score: the score that counts as 1. */
  readonly attainable: number
}

/** BM25's inverse document frequency (never negative). */
const idf = (index: KeywordIndex, documentFrequency: number) =>
  Math.log(1 + (index.documents - documentFrequency + 0.5) / (documentFrequency + 0.5))

/**
 * Keyword relevance is a memory's BM25 score divided by what an average-length memory containing
 * every query term once would score, capped at 1. Each term counts with its weight (a term of an
 * earlier message of the conversation less than one of the latest). Query terms no memory contains count in that
 * denominator with the highest IDF, so a memory that matches one common word of a long question stays low.
 */
export const keywordQuery = (index: KeywordIndex, terms: ReadonlyMap<string, number>): KeywordQuery => {
  const weights = new Map<string, number>()
  let attainable = 0
  for (const [term, termWeight] of terms) {
    const frequency = index.postings.get(term)?.length ?? 0
    const weight = termWeight * idf(index, frequency)
    attainable += weight
    if (frequency > 0) weights.set(term, weight)
  }
  return { index, weights, attainable }
}

/** The keyword relevance of one memory, in [0, 1]. */
export const keywordScore = (query: KeywordQuery, row: number): number => {
  if (query.weights.size === 0) return 0
  const document = query.index.terms[row]!
  const lengthFactor = K1 * (1 - B + (B * document.length) / Math.max(query.index.averageLength, 1))
  let score = 0
  for (const [term, weight] of query.weights) {
    const frequency = document.counts.get(term)
    if (frequency !== undefined) score += (weight * frequency * (K1 + 1)) / (frequency + lengthFactor)
  }
  return Math.min(1, score / query.attainable)
}

/**
 * The memories that could reach `minimum` keyword relevance: those containing at least one term
 * that, together with the still commoner ones, can get there. A memory that only shares very
 * common words with the query is never visited, so a word found in thousands of memories costs
 * nothing. (A term adds at most idf × (k1 + 1) / attainable.)
 */
export const keywordCandidates = (query: KeywordQuery, minimum: number): ReadonlySet<number> => {
  const byWeight = [...query.weights].sort((a, b) => a[1] - b[1])
  let commonMost = 0
  let selective = 0
  while (selective < byWeight.length) {
    const most = (byWeight[selective]![1] * (K1 + 1)) / query.attainable
    if (commonMost + most >= minimum) break
    commonMost += most
    selective++
  }
  const rows = new Set<number>()
  for (const [term] of byWeight.slice(selective)) for (const row of query.index.postings.get(term)!) rows.add(row)
  return rows
}
