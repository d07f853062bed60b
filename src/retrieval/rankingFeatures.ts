import { DAY_MS, decayFactorOf, type MemoryHalfLives } from "../domain/memoryDecay.ts"
import { featureIndex, ROW_FEATURES, SEMANTIC_Z_CAP, STANDOUT_CAP } from "./featureSet.ts"
import type { KeywordQuery } from "./keywordIndex.ts"
import type { CandidateMemory, MemoryIndex } from "./MemoryIndex.ts"
import { keywordPartOf } from "./queryKeywords.ts"
import { type QueryLinks, queryLinksOf } from "./queryLinks.ts"
import { inWindow, specificityOf, type TimeWindow } from "./timeWindow.ts"

const ROW_FEATURE_COUNT = ROW_FEATURES.length
const ROW_FEATURE_INDEXES = Int32Array.from(ROW_FEATURES, (name) => featureIndex[name])

/** The smallest profile the model was fitted on: a smaller one counts as this size (no extrapolation). */
const SMALLEST_FITTED_PROFILE = 30
/**
 * The largest (LoCoMo's longest conversation, 689 turns): a larger one counts as this size. Read past
 * it, the size's weight would push a 10,000-memory profile's answers below the floor.
 */
const LARGEST_FITTED_PROFILE = 700

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
  /** The query asks when, how long or how often (`timeMentions.ts`); undefined: it does not. */
  readonly asksTime?: boolean | undefined
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
  /** The query's names, and the memories they reach (`queryLinks.ts`). */
  readonly links: QueryLinks
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
  const part = keywordPartOf(index, query.terms)
  const { bestKeyword, keywordRanks, keywordScores, keywords } = part

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
    links: queryLinksOf(index, part),
    cosineMean,
    cosineSpread,
    chanceZ,
    bestZ: best === undefined || cosines === undefined ? 0 : (cosines[best]! - cosineMean) / cosineSpread,
    semanticRanks,
    profileSize:
      Math.log2(Math.min(LARGEST_FITTED_PROFILE, Math.max(SMALLEST_FITTED_PROFILE, index.memories.length))) / 14,
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

/** Whether the memory happened in the period the query names, or names a period that overlaps it. */
export const inQueryWindow = (prepared: PreparedQuery, row: number): boolean => {
  const { window } = prepared.query
  if (window === undefined) return false
  const at = eventTimeOf(prepared.index.memories[row]!)
  if (at !== null && inWindow(window, at)) return true
  const { mentioned } = prepared.index
  // NaN (no period named) compares false.
  return mentioned[2 * row]! < window.end && mentioned[2 * row + 1]! > window.start
}

/** The keyword share of a row (0 for −1, no such row). */
const shareOf = (prepared: PreparedQuery, row: number): number =>
  row === -1 || prepared.bestKeyword === 0 ? 0 : prepared.keywordScores[row]! / prepared.bestKeyword

/** The `previousKeyword` feature: the keyword share of the memory remembered just before this one. */
export const previousShareOf = (prepared: PreparedQuery, row: number): number =>
  shareOf(prepared, prepared.index.previous[row]!)

/** The `nextKeyword` feature. */
export const nextShareOf = (prepared: PreparedQuery, row: number): number =>
  shareOf(prepared, prepared.index.next[row]!)

/** The `nearKeyword` feature: the best share two and three steps away. */
export const nearShareOf = (prepared: PreparedQuery, row: number): number => {
  const { previous, next } = prepared.index
  const before2 = previous[row]! === -1 ? -1 : previous[previous[row]!]!
  const after2 = next[row]! === -1 ? -1 : next[next[row]!]!
  return Math.max(
    shareOf(prepared, before2),
    shareOf(prepared, before2 === -1 ? -1 : previous[before2]!),
    shareOf(prepared, after2),
    shareOf(prepared, after2 === -1 ? -1 : next[after2]!)
  )
}

/** The `neighbourSemantic` feature. */
export const neighbourSemanticOf = (prepared: PreparedQuery, row: number): number => {
  const before = prepared.index.previous[row]!
  const after = prepared.index.next[row]!
  return semanticZOf(
    Math.max(before === -1 ? 0 : cosineZ(prepared, before), after === -1 ? 0 : cosineZ(prepared, after))
  )
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
  out[F.nextKeyword] = nextShareOf(prepared, row)
  out[F.nearKeyword] = nearShareOf(prepared, row)
  out[F.neighbourSemantic] = prepared.query.cosines === undefined ? 0 : neighbourSemanticOf(prepared, row)
  const { links } = prepared
  out[F.names] = links.nameShares.get(row) ?? 0
  const subject = prepared.index.subjects[row]
  out[F.subject] = subject !== undefined && links.names.has(subject) ? out[F.keywordShare]! : 0
  out[F.hop] = links.hops.get(row) ?? 0
  out[F.timeAnswer] = prepared.query.asksTime === true ? prepared.index.statesTime[row]! : 0
  out[F.profileSize] = prepared.profileSize
  out[F.queryBestKeyword] = prepared.bestKeyword
  out[F.queryBestSemantic] = semanticZOf(prepared.bestZ)
}
