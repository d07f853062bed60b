import type { MemoryType } from "../domain/Memory.ts"
import type { CandidateMemory, MemoryIndex } from "./MemoryIndex.ts"
import {
  cosineZ,
  FEATURE_COUNT,
  type FeatureSettings,
  featureIndex,
  featuresOf,
  inQueryWindow,
  type PreparedQuery,
  prepareQuery,
  QUERY_FEATURES,
  type RankingQuery,
  semanticZOf,
  standoutOf
} from "./rankingFeatures.ts"
import { logitFor, probabilityOf, type RankingModel, type Scorer } from "./rankingModel.ts"

export type { RankingQuery } from "./rankingFeatures.ts"

const QUERY_FEATURE_INDEXES = [...QUERY_FEATURES].map((name) => featureIndex[name])

export interface RankingSettings {
  readonly model: RankingModel
  readonly features: FeatureSettings
}

/** What the search endpoint shows of a memory's score. */
export interface ScoreParts {
  /** Cosine similarity of the message and the memory; null when either has no vector. */
  readonly semantic: number | null
  /** Keyword relevance (normalised BM25), in [0, 1]. */
  readonly keyword: number
  /** The probability compared with the floor: the score, or with a vector the larger of it and the keyword-only probability. */
  readonly relevance: number
  /** When the memory happened in the period the message names: 1 for a day or week, less for longer periods. */
  readonly time: number
  /** importance × decay factor. */
  readonly importance: number
  /** 0.5^(age / recency half-life). */
  readonly recency: number
}

export interface ScoredMemory {
  readonly memory: CandidateMemory
  /** Its row in the `MemoryIndex` it was ranked from. */
  readonly row: number
  /** The probability that the memory answers the message. */
  readonly score: number
  readonly parts: ScoreParts
  /** Relevant enough to inject: the probability reaches the relevance floor. */
  readonly relevant: boolean
  /** Another chosen memory is about the same subject: one may be a change of the other (shown with its date). */
  readonly changedFact?: true
}

export interface RankingOptions {
  readonly limit: number
  readonly type?: MemoryType | undefined
  /** Leave out memories below the relevance floor (injection does; search lists them, flagged). */
  readonly relevantOnly: boolean
}

/**
 * Ranks a profile's memories for a query by the fitted model (`rankingModel.ts`): each memory's
 * score is the probability that it answers the message, from its features (`rankingFeatures.ts`),
 * by the weights for a query with a vector or those for one without. A memory is relevant when its
 * probability reaches the floor — with a vector, the larger of the two probabilities, so a vector
 * can add a memory to what is injected but never take away one the keywords alone would inject.
 * Injection takes the best `limit` relevant memories, so a message that no memory answers gets
 * none. Ties go to the more important memory, then the newer one.
 */
export const scoreMemories = (
  index: MemoryIndex,
  query: RankingQuery,
  settings: RankingSettings,
  now: number,
  options: RankingOptions
): ReadonlyArray<ScoredMemory> => {
  const { model } = settings
  const withVectors = query.cosines !== undefined
  const scorer = withVectors ? model.withVectors : model.keywordsOnly
  const prepared = prepareQuery(index, query, now, settings.features)
  const features = new Float64Array(FEATURE_COUNT)
  const top: Array<ScoredMemory> = []

  for (const row of candidateRows(prepared, model, options)) {
    const memory = index.memories[row]!
    if (options.type !== undefined && memory.type !== options.type) continue
    featuresOf(prepared, row, features)
    const score = probabilityOf(logitFor(scorer, features))
    // The keyword-only weights ignore the semantic features.
    const relevance = withVectors ? Math.max(score, probabilityOf(logitFor(model.keywordsOnly, features))) : score
    const relevant = relevance >= model.relevanceFloor
    if (options.relevantOnly && !relevant) continue
    const importance = features[featureIndex.importance]!
    if (top.length === options.limit && !outranks(score, importance, memory, top[top.length - 1]!)) continue
    const cosine = query.cosines?.[row]
    const parts: ScoreParts = {
      semantic: cosine === undefined || Number.isNaN(cosine) ? null : cosine,
      keyword: features[featureIndex.keyword]!,
      relevance,
      time: features[featureIndex.time]!,
      importance,
      recency: features[featureIndex.recency]!
    }
    // Insert in order (the list is at most `limit` long).
    let at = top.length
    while (at > 0 && outranks(score, importance, memory, top[at - 1]!)) at--
    top.splice(at, 0, { memory, row, score, parts, relevant })
    if (top.length > options.limit) top.pop()
  }
  return top
}

/**
 * The rows worth scoring. When only relevant memories are wanted (injection), those some relevance
 * signal reaches — a shared term, a neighbour with one, the period the message names, a cosine
 * that stands out enough — since without one a memory stays below the floor
 * (`ceilingWithoutRelevance`). Otherwise every row.
 */
const candidateRows = (prepared: PreparedQuery, model: RankingModel, options: RankingOptions): Iterable<number> => {
  const { index, query } = prepared
  const rows = index.memories.length
  if (!options.relevantOnly || rows === 0) return rangeOf(rows)
  const { floorLogit, withVectors: scorer } = model
  // The features the whole query shares, read off any row.
  const shared = new Float64Array(FEATURE_COUNT)
  featuresOf(prepared, 0, shared)
  const ceilingOf = (candidate: Scorer) => {
    let ceiling = candidate.ceilingWithoutRelevance
    for (const j of QUERY_FEATURE_INDEXES) ceiling += candidate.weights[j]! * shared[j]!
    return ceiling
  }
  const vectorCeiling = ceilingOf(scorer)
  if (vectorCeiling >= floorLogit || ceilingOf(model.keywordsOnly) >= floorLogit) return rangeOf(rows)
  const candidates = new Set<number>()
  for (const row of prepared.keywordScores.keys()) {
    candidates.add(row)
    const next = index.next[row]!
    if (next !== -1) candidates.add(next)
  }
  for (const row of prepared.semanticRanks.keys()) candidates.add(row)
  const { cosines, window } = query
  if (cosines !== undefined || window !== undefined) {
    // What the semantic features must add for a memory with no other signal to reach the floor.
    // (Only the weights with vectors read them.)
    const needed = floorLogit - vectorCeiling
    const zWeight = scorer.weights[featureIndex.semanticZ]!
    const standoutWeight = scorer.weights[featureIndex.semanticStandout]!
    for (let row = 0; row < rows; row++) {
      if (candidates.has(row)) continue
      if (inQueryWindow(prepared, row)) candidates.add(row)
      else if (cosines !== undefined && !Number.isNaN(cosines[row]!)) {
        const z = cosineZ(prepared, row)
        if (zWeight * semanticZOf(z) + standoutWeight * standoutOf(prepared, z) >= needed) candidates.add(row)
      }
    }
  }
  return candidates
}

function* rangeOf(count: number) {
  for (let i = 0; i < count; i++) yield i
}

/** Higher score first; on a tie the more important (× decay), then the newer memory, then the smaller id (a stable order). */
const outranks = (score: number, importance: number, memory: CandidateMemory, other: ScoredMemory) =>
  score !== other.score
    ? score > other.score
    : importance !== other.parts.importance
      ? importance > other.parts.importance
      : memory.createdAt !== other.memory.createdAt
        ? memory.createdAt > other.memory.createdAt
        : memory.id < other.memory.id

/**
 * The reference ranking of `MEMORY_RANKING=cosine`: the query's cosine similarity alone, every
 * memory with a vector counted relevant (what a plain vector search returns). Nothing without a vector.
 */
export const scoreByCosine = (
  index: MemoryIndex,
  cosines: Float32Array | undefined,
  options: RankingOptions
): ReadonlyArray<ScoredMemory> => {
  if (cosines === undefined) return []
  const scored: Array<ScoredMemory> = []
  index.memories.forEach((memory, row) => {
    const cosine = cosines[row]!
    if (Number.isNaN(cosine) || (options.type !== undefined && memory.type !== options.type)) return
    const parts = { semantic: cosine, keyword: 0, relevance: cosine, time: 0, importance: 0, recency: 0 }
    scored.push({ memory, row, score: cosine, parts, relevant: true })
  })
  return scored.sort((a, b) => (outranks(a.score, 0, a.memory, b) ? -1 : 1)).slice(0, options.limit)
}
