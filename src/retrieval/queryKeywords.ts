import { type KeywordQuery, keywordQuery, keywordScore } from "./keywordIndex.ts"
import type { MemoryIndex } from "./MemoryIndex.ts"

/** A query's terms read against one index: each row's keyword score and rank. */
export interface KeywordPart {
  readonly keywords: KeywordQuery
  readonly keywordScores: ReadonlyArray<number>
  readonly bestKeyword: number
  readonly keywordRanks: ReadonlyArray<number>
  /** The rows sharing a term with the query, best keyword score first. */
  readonly matched: ReadonlyArray<number>
}

/**
 * The keyword part of a query read against an index, kept for the query's terms while they live: a
 * message is ranked by keywords alone and then with its vector, and both read the same part.
 */
const keywordParts = new WeakMap<
  ReadonlyMap<string, number>,
  { readonly index: MemoryIndex; readonly part: KeywordPart }
>()

export const keywordPartOf = (index: MemoryIndex, terms: ReadonlyMap<string, number>): KeywordPart => {
  const known = keywordParts.get(terms)
  if (known !== undefined && known.index === index) return known.part
  const keywords = keywordQuery(index.keywords, terms)
  // Arrays by row rather than maps: every ranked row reads them, and a row sharing a term with the
  // query always scores above 0 (each term's weight is positive). Plain arrays: a typed array of
  // more than a few numbers lives outside the heap and costs more to make.
  const keywordScores = new Array<number>(index.memories.length).fill(0)
  const matched: Array<number> = []
  for (const term of keywords.weights.keys()) {
    for (const row of index.keywords.postings.get(term)!) {
      if (keywordScores[row] === 0) {
        keywordScores[row] = keywordScore(keywords, row)
        matched.push(row)
      }
    }
  }
  matched.sort((a, b) => keywordScores[b]! - keywordScores[a]!)
  // Equal scores share a rank (1 + how many score higher).
  const keywordRanks = new Array<number>(index.memories.length).fill(0)
  matched.forEach((row, i) => {
    const before = i > 0 ? matched[i - 1]! : undefined
    keywordRanks[row] =
      before !== undefined && keywordScores[before] === keywordScores[row] ? keywordRanks[before]! : i + 1
  })
  const bestKeyword = matched.length === 0 ? 0 : keywordScores[matched[0]!]!
  const part = { keywords, keywordScores, bestKeyword, keywordRanks, matched }
  keywordParts.set(terms, { index, part })
  return part
}
