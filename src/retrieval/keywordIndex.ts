import type { Terms } from "./terms.ts"

/** BM25's term-frequency saturation and length normalisation (the usual values). */
const K1 = 1.2
const B = 0.75

/**
 * An inverted index over one profile's memories, built when the profile is loaded: for each term,
 * the memories that contain it. Scoring a query touches only the memories sharing a term with it.
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
  return { documents: terms.length, averageLength: terms.length === 0 ? 0 : totalLength / terms.length, postings, terms }
}

/** Rarer terms say more: BM25's inverse document frequency (never negative). */
const idf = (index: KeywordIndex, documentFrequency: number) =>
  Math.log(1 + (index.documents - documentFrequency + 0.5) / (documentFrequency + 0.5))

/**
 * Keyword relevance of every memory to the query, in [0, 1]: the memory's BM25 score divided by
 * what an average-length memory containing every query term once would score. Query terms no
 * memory contains count in that denominator with the highest IDF, so a memory that matches one
 * common word of a long question stays low. Memories sharing no term score 0 (left undefined
 * in the sparse result).
 */
export const keywordScores = (index: KeywordIndex, query: ReadonlySet<string>): ReadonlyMap<number, number> => {
  const scores = new Map<number, number>()
  if (query.size === 0 || index.documents === 0) return scores
  let attainable = 0
  for (const term of query) {
    const postings = index.postings.get(term)
    const weight = idf(index, postings?.length ?? 0)
    attainable += weight
    if (postings === undefined) continue
    for (const document of postings) {
      const terms = index.terms[document]!
      const frequency = terms.counts.get(term)!
      const saturated = (frequency * (K1 + 1)) /
        (frequency + K1 * (1 - B + (B * terms.length) / Math.max(index.averageLength, 1)))
      scores.set(document, (scores.get(document) ?? 0) + weight * saturated)
    }
  }
  for (const [document, score] of scores) scores.set(document, Math.min(1, score / attainable))
  return scores
}
