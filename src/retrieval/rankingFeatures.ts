import { DAY_MS, decayFactorOf, type MemoryHalfLives } from "../domain/memoryDecay.ts"
import { type KeywordQuery, keywordQuery, keywordScore } from "./keywordIndex.ts"
import type { CandidateMemory, MemoryIndex } from "./MemoryIndex.ts"
import { inWindow, specificityOf, type TimeWindow } from "./timeWindow.ts"

/**
 * What ranking knows about one (query, memory) pair, as numbers the fitted model weighs
 * (`rankingModel.ts`). Every feature is 0 when its signal says nothing, and the relevance features
 * never go below 0: a weak signal can only fail to help, never count against a memory.
 */
export const FEATURES = [
  /** BM25 of the query, normalised by what an average memory holding every query term would score, in [0, 1]. */
  "keyword",
  /** keyword / the best keyword score of this query over the profile. */
  "keywordShare",
  /** 1 / the memory's rank by keyword score (0 without a shared term). */
  "keywordRank",
  /** How far the cosine stands above this query's mean cosine over the profile, in standard deviations, / 4, ≥ 0. */
  "semanticZ",
  /** How far that z-score stands above what the best of this many memories would reach by chance, ≥ 0. */
  "semanticStandout",
  /** 1 / the memory's rank by cosine, for the first 50 (0 beyond). */
  "semanticRank",
  /** When the memory happened in the period the query names: 1 for a day or a week, less for longer periods. */
  "time",
  /** importance × decay factor. */
  "importance",
  /** 0.5^(age / recency half-life). */
  "recency",
  /** How long the memory is: log2(1 + terms) / 6, at most 1 (a longer memory says more). */
  "length",
  "typeFact",
  "typePreference",
  "typeEvent",
  /** The memory is a question: it asks rather than states. */
  "asks",
  /** keywordShare of the memory remembered just before it (its neighbour in the conversation). */
  "previousKeyword",
  /** The same when that neighbour is a question (this memory may be its answer). */
  "answersKeyword",
  /** How many memories the profile holds: log2(n) / 14, n at least 30 (the fewer there are, the likelier each one is the answer). */
  "profileSize",
  /** The best keyword score of this query over the profile (how well anything matches at all). */
  "queryBestKeyword",
  /** The best semanticZ of this query over the profile. */
  "queryBestSemantic"
] as const

export type FeatureName = (typeof FEATURES)[number]

/** The features that say a memory answers the query. */
export const RELEVANCE_FEATURES: ReadonlySet<FeatureName> = new Set([
  "keyword",
  "keywordShare",
  "keywordRank",
  "semanticZ",
  "semanticStandout",
  "semanticRank",
  "time",
  "previousKeyword",
  "answersKeyword"
])

/**
 * Weights never fitted below 0: the relevance features, and importance and recency (an important
 * or recent memory must never rank lower for it, whatever a benchmark's conversations prefer).
 */
export const NON_NEGATIVE_FEATURES: ReadonlySet<FeatureName> = new Set([
  ...RELEVANCE_FEATURES,
  "importance",
  "recency",
  "queryBestKeyword",
  "queryBestSemantic"
])

/**
 * Features the same for every memory of a query: they cannot change the order, only how likely it
 * is that anything answers (fitted with the probability, not the ranking).
 */
export const QUERY_FEATURES: ReadonlySet<FeatureName> = new Set([
  "profileSize",
  "queryBestKeyword",
  "queryBestSemantic"
])

/** The features that need a query vector. */
export const SEMANTIC_FEATURES: ReadonlySet<FeatureName> = new Set([
  "semanticZ",
  "semanticStandout",
  "semanticRank",
  "queryBestSemantic"
])

/**
 * The features of the memory alone (its text, type and whether it asks): the same for every query,
 * so they are computed once per index (`rowFeaturesOf`).
 */
export const ROW_FEATURES = [
  "length",
  "typeFact",
  "typePreference",
  "typeEvent",
  "asks"
] as const satisfies ReadonlyArray<FeatureName>

export const FEATURE_COUNT = FEATURES.length
export const featureIndex = Object.fromEntries(FEATURES.map((name, i) => [name, i])) as Record<FeatureName, number>

const ROW_FEATURE_COUNT = ROW_FEATURES.length
const ROW_FEATURE_INDEXES = Int32Array.from(ROW_FEATURES, (name) => featureIndex[name])

const SEMANTIC_Z_CAP = 2
const STANDOUT_CAP = 3

/** The largest value each feature takes (used to bound what a memory without any relevance signal can score). */
export const FEATURE_MAXIMUM: Readonly<Record<FeatureName, number>> = {
  keyword: 1,
  keywordShare: 1,
  keywordRank: 1,
  semanticZ: SEMANTIC_Z_CAP,
  semanticStandout: STANDOUT_CAP,
  semanticRank: 1,
  time: 1,
  importance: 1,
  recency: 1,
  length: 1,
  typeFact: 1,
  typePreference: 1,
  typeEvent: 1,
  asks: 1,
  previousKeyword: 1,
  answersKeyword: 1,
  profileSize: 1,
  queryBestKeyword: 1,
  queryBestSemantic: SEMANTIC_Z_CAP
}

/** The smallest profile the model was fitted on: a smaller one counts as this size (no extrapolation). */
const SMALLEST_FITTED_PROFILE = 30

/** Rows ranked by cosine that get a rank feature. */
const SEMANTIC_RANKED = 50
/** Below this many memories with vectors, a query's cosine spread is too uncertain to read z-scores from. */
const MIN_ROWS_FOR_SPREAD = 8
/** The spread assumed in its place, blended with the measured one by row count. */
const PRIOR_SPREAD = 0.1
const PRIOR_ROWS = 20

/** What a query brings to ranking. */
export interface RankingQuery {
  /** The query's terms with their weights (the latest message's 1, earlier ones' less). */
  readonly terms: ReadonlyMap<string, number>
  /** Cosine similarity of the query vector to each row of the index's vectors (NaN: the memory has none); undefined without a query vector. */
  readonly cosines: Float32Array | undefined
  /** The period the query asks about, if any. */
  readonly window: TimeWindow | undefined
}

export interface FeatureSettings {
  readonly halfLives: MemoryHalfLives
  readonly recencyHalfLifeDays: number
}

/** A query read against one profile: the per-query statistics the features are relative to. */
export interface PreparedQuery {
  readonly index: MemoryIndex
  readonly query: RankingQuery
  readonly keywords: KeywordQuery
  /** Keyword score by row: above 0 for the rows that share a term with the query, else 0. */
  readonly keywordScores: ReadonlyArray<number>
  readonly bestKeyword: number
  /** Row → 1-based rank by keyword score (0 for the rows without a keyword score). */
  readonly keywordRanks: ReadonlyArray<number>
  /** Mean and spread of the cosines (undefined without a query vector). */
  readonly cosineMean: number
  readonly cosineSpread: number
  /** The z-score the best of this many rows would reach by chance. */
  readonly chanceZ: number
  /** The highest z-score of the query's cosines (0 without a vector). */
  readonly bestZ: number
  /** Row → 1-based rank by cosine, for the first `SEMANTIC_RANKED`. */
  readonly semanticRanks: ReadonlyMap<number, number>
  /** The `profileSize` feature (the same for every row). */
  readonly profileSize: number
  /** `rowFeaturesOf(index)`. */
  readonly rowFeatures: Float64Array
  readonly now: number
  readonly settings: FeatureSettings
}

/** The expected maximum of n standard normal draws (its usual asymptotic form). */
export const chanceMaximumZ = (n: number): number => {
  if (n < 2) return 0
  const a = Math.sqrt(2 * Math.log(n))
  return a - (Math.log(Math.log(n)) + Math.log(4 * Math.PI)) / (2 * a)
}

interface KeywordPart {
  readonly keywords: KeywordQuery
  readonly keywordScores: ReadonlyArray<number>
  readonly bestKeyword: number
  readonly keywordRanks: ReadonlyArray<number>
}

/**
 * The keyword part of a query read against an index, kept for the query's terms while they live: a
 * message is ranked by keywords alone and then with its vector, and both read the same part.
 */
const keywordParts = new WeakMap<
  ReadonlyMap<string, number>,
  { readonly index: MemoryIndex; readonly part: KeywordPart }
>()

const keywordPartOf = (index: MemoryIndex, terms: ReadonlyMap<string, number>): KeywordPart => {
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
  const part = { keywords, keywordScores, bestKeyword, keywordRanks }
  keywordParts.set(terms, { index, part })
  return part
}

/** Each index's row features, computed the first time it is ranked (an index never changes). */
const rowFeatureCache = new WeakMap<MemoryIndex, Float64Array>()

/**
 * The `ROW_FEATURES` of every memory of an index, in that order, one row after another (row r's
 * start at r × ROW_FEATURES.length).
 */
export const rowFeaturesOf = (index: MemoryIndex): Float64Array => {
  let features = rowFeatureCache.get(index)
  if (features === undefined) {
    features = computeRowFeatures(index)
    rowFeatureCache.set(index, features)
  }
  return features
}

// Apart from the lookup above: it runs once per index, and the request path need not compile it.
const computeRowFeatures = (index: MemoryIndex): Float64Array => {
  const features = new Float64Array(index.memories.length * ROW_FEATURE_COUNT)
  index.memories.forEach((memory, row) => {
    const values: Record<(typeof ROW_FEATURES)[number], number> = {
      length: Math.min(1, Math.log2(1 + index.keywords.terms[row]!.length) / 6),
      typeFact: memory.type === "fact" ? 1 : 0,
      typePreference: memory.type === "preference" ? 1 : 0,
      typeEvent: memory.type === "event" ? 1 : 0,
      asks: index.asks[row]!
    }
    ROW_FEATURES.forEach((name, k) => {
      features[row * ROW_FEATURE_COUNT + k] = values[name]
    })
  })
  return features
}

export const prepareQuery = (
  index: MemoryIndex,
  query: RankingQuery,
  now: number,
  settings: FeatureSettings
): PreparedQuery => {
  const { bestKeyword, keywordRanks, keywordScores, keywords } = keywordPartOf(index, query.terms)

  let cosineMean = 0
  let cosineSpread = PRIOR_SPREAD
  let chanceZ = 0
  const semanticRanks = new Map<number, number>()
  const { cosines } = query
  if (cosines !== undefined) {
    let n = 0
    let sum = 0
    let squares = 0
    for (let row = 0; row < cosines.length; row++) {
      const c = cosines[row]!
      if (Number.isNaN(c)) continue
      n++
      sum += c
      squares += c * c
    }
    if (n > 0) {
      cosineMean = sum / n
      const measured = Math.sqrt(Math.max(0, squares / n - cosineMean * cosineMean))
      // Few rows: lean on the prior spread (a handful of cosines says little about the model's spread).
      cosineSpread =
        n < MIN_ROWS_FOR_SPREAD
          ? PRIOR_SPREAD
          : Math.sqrt((n * measured * measured + PRIOR_ROWS * PRIOR_SPREAD * PRIOR_SPREAD) / (n + PRIOR_ROWS))
      chanceZ = chanceMaximumZ(n)
    }
    for (const [row, rank] of topRows(cosines, SEMANTIC_RANKED)) semanticRanks.set(row, rank)
  }
  const best = semanticRanks.size === 0 ? undefined : [...semanticRanks].find(([, rank]) => rank === 1)?.[0]
  return {
    index,
    query,
    keywords,
    keywordScores,
    bestKeyword,
    keywordRanks,
    cosineMean,
    cosineSpread,
    chanceZ,
    bestZ: best === undefined || cosines === undefined ? 0 : (cosines[best]! - cosineMean) / cosineSpread,
    semanticRanks,
    profileSize: Math.min(1, Math.log2(Math.max(SMALLEST_FITTED_PROFILE, index.memories.length)) / 14),
    rowFeatures: rowFeaturesOf(index),
    now,
    settings
  }
}

/** The `count` rows of highest cosine with their 1-based ranks (equal cosines share one). */
const topRows = (cosines: Float32Array, count: number): ReadonlyArray<readonly [number, number]> => {
  const top: Array<number> = []
  for (let row = 0; row < cosines.length; row++) {
    const c = cosines[row]!
    if (Number.isNaN(c)) continue
    if (top.length === count && c <= cosines[top[top.length - 1]!]!) continue
    let at = top.length
    while (at > 0 && c > cosines[top[at - 1]!]!) at--
    top.splice(at, 0, row)
    if (top.length > count) top.pop()
  }
  const ranks: Array<readonly [number, number]> = []
  top.forEach((row, i) => {
    const before = ranks[i - 1]
    ranks.push([row, before !== undefined && cosines[before[0]] === cosines[row] ? before[1] : i + 1])
  })
  return ranks
}

/** When an event happened: its `occurredAt`, else (for events) when it was remembered. */
const eventTimeOf = (memory: CandidateMemory): number | null =>
  memory.occurredAt ?? (memory.type === "event" ? memory.createdAt : null)

/** The z-score of a row's cosine for this query (0 without a vector). */
export const cosineZ = (prepared: PreparedQuery, row: number): number => {
  const c = prepared.query.cosines?.[row]
  if (c === undefined || Number.isNaN(c)) return 0
  return (c - prepared.cosineMean) / prepared.cosineSpread
}

/** The `semanticZ` feature of a z-score. */
export const semanticZOf = (z: number): number => Math.min(SEMANTIC_Z_CAP, Math.max(0, z) / 4)

/** The `semanticStandout` feature of a z-score. */
export const standoutOf = (prepared: PreparedQuery, z: number): number =>
  Math.min(STANDOUT_CAP, Math.max(0, z - prepared.chanceZ))

/** Whether the memory happened in the period the query names. */
export const inQueryWindow = (prepared: PreparedQuery, row: number): boolean => {
  const { window } = prepared.query
  if (window === undefined) return false
  const at = eventTimeOf(prepared.index.memories[row]!)
  return at !== null && inWindow(window, at)
}

/** The `previousKeyword` feature: the keyword share of the memory remembered just before this one. */
export const previousShareOf = (prepared: PreparedQuery, row: number): number => {
  const previous = prepared.index.previous[row]!
  return previous === -1 || prepared.bestKeyword === 0 ? 0 : prepared.keywordScores[previous]! / prepared.bestKeyword
}

/** Whether the memory remembered just before this one is a question (`answersKeyword` is then its share). */
export const previousAsks = (prepared: PreparedQuery, row: number): boolean => {
  const previous = prepared.index.previous[row]!
  return previous !== -1 && prepared.index.asks[previous] === 1
}

const F = featureIndex

/** Writes the features of one row into `out` (in `FEATURES` order). */
export const featuresOf = (prepared: PreparedQuery, row: number, out: Float64Array): void => {
  const memory = prepared.index.memories[row]!
  const keyword = prepared.keywordScores[row]!
  const z = cosineZ(prepared, row)
  out[F.keyword] = keyword
  out[F.keywordShare] = prepared.bestKeyword > 0 ? keyword / prepared.bestKeyword : 0
  out[F.keywordRank] = keyword > 0 ? 1 / prepared.keywordRanks[row]! : 0
  out[F.semanticZ] = semanticZOf(z)
  out[F.semanticStandout] = standoutOf(prepared, z)
  const semanticRank = prepared.semanticRanks.get(row)
  out[F.semanticRank] = semanticRank === undefined ? 0 : 1 / semanticRank
  out[F.time] = inQueryWindow(prepared, row) ? specificityOf(prepared.query.window!) : 0
  out[F.importance] = memory.importance * decayFactorOf(memory, prepared.settings.halfLives, prepared.now)
  out[F.recency] =
    0.5 ** (Math.max(0, prepared.now - memory.createdAt) / DAY_MS / prepared.settings.recencyHalfLifeDays)
  const at = row * ROW_FEATURE_COUNT
  for (let k = 0; k < ROW_FEATURE_COUNT; k++) out[ROW_FEATURE_INDEXES[k]!] = prepared.rowFeatures[at + k]!
  const previousShare = previousShareOf(prepared, row)
  out[F.previousKeyword] = previousShare
  out[F.answersKeyword] = previousAsks(prepared, row) ? previousShare : 0
  out[F.profileSize] = prepared.profileSize
  out[F.queryBestKeyword] = prepared.bestKeyword
  out[F.queryBestSemantic] = semanticZOf(prepared.bestZ)
}
