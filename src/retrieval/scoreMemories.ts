import type { MemoryType } from "../domain/Memory.ts"
import { correctionOf, RERANK_DEPTH } from "./boostedTrees.ts"
import {
  FEATURE_COUNT,
  FEATURE_MAXIMUM,
  FEATURES,
  type FeatureName,
  featureIndex,
  QUERY_FEATURES,
  RELEVANCE_FEATURES,
  ROW_FEATURES
} from "./featureSet.ts"
import type { CandidateMemory, MemoryIndex } from "./MemoryIndex.ts"
import {
  cosineZ,
  type FeatureSettings,
  featuresOf,
  inQueryWindow,
  nearShareOf,
  neighbourSemanticOf,
  nextShareOf,
  type PreparedQuery,
  prepareQuery,
  previousShareOf,
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
  /** Only memories this accepts (the app's `memoryFilter`). */
  readonly accept?: ((memory: CandidateMemory) => boolean) | undefined
  /** Leave out memories below the relevance floor (injection does; search lists them, flagged). */
  readonly relevantOnly: boolean
}

/**
 * Where one row's features are written while it is scored, and the features a query shares while its
 * candidates are chosen: allocated once (a typed array this long lives outside the heap, and two a
 * request cost more than scoring a row). Ranking runs to its end without yielding, so no two rankings
 * share them at once.
 */
const rowScratch = new Float64Array(FEATURE_COUNT)
const queryScratch = new Float64Array(FEATURE_COUNT)

/** A row kept while the profile is scanned, ordered by its linear logit (`score`), before the trees. */
interface Kept extends Ordered {
  readonly row: number
  /** The keyword-only weights' logit (with a vector; else the same). */
  readonly keywordLogit: number
}

/**
 * Ranks a profile's memories for a query by the fitted model (`rankingModel.ts`): each memory's
 * score is the probability that it answers the message, from its features (`rankingFeatures.ts`),
 * by the weights for a query with a vector or those for one without; the first `RERANK_DEPTH` by
 * the weighted sum are rescored with the model's trees (`boostedTrees.ts`). A memory is relevant
 * when its probability reaches the floor — with a vector, the larger of the two probabilities, so a
 * vector can add a memory to what is injected but never take away one the keywords alone would
 * inject. Injection takes the best `limit` relevant memories, so a message that no memory answers
 * gets none. Ties go to the more important memory, then the newer one.
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
  const features = rowScratch
  const reranked = scorer.trees.count > 0 ? RERANK_DEPTH : 0
  const depth = Math.max(options.limit, reranked)
  const kept: Array<Kept> = []
  /** With `relevantOnly`: the best `limit` rows past `depth` that are relevant without the trees. */
  const beyond: Array<Kept> = []

  const candidates = candidateRows(prepared, model, options)
  const count = candidates === undefined ? index.memories.length : candidates.length
  for (let i = 0; i < count; i++) {
    const row = candidates === undefined ? i : candidates[i]!
    const memory = index.memories[row]!
    if (options.type !== undefined && memory.type !== options.type) continue
    if (options.accept !== undefined && !options.accept(memory)) continue
    featuresOf(prepared, row, features)
    const logit = logitFor(scorer, features)
    // The keyword-only weights ignore the semantic features.
    const keywordLogit = withVectors ? logitFor(model.keywordsOnly, features) : logit
    // Below the floor, only the trees can make a row relevant, and they rescore the first `reranked` only.
    if (options.relevantOnly && reranked === 0 && Math.max(logit, keywordLogit) < model.floorLogit) continue
    const next: Kept = { row, memory, score: logit, keywordLogit, importance: features[featureIndex.importance]! }
    const dropped = insertOrdered(kept, next, depth)
    // Past the depth the trees rescore nothing, so a row relevant on its weighted sums stays relevant:
    // by the keyword-only weights it may be, however low the weights with the vector put it.
    if (
      options.relevantOnly &&
      dropped !== undefined &&
      Math.max(dropped.score, dropped.keywordLogit) >= model.floorLogit
    )
      insertOrdered(beyond, dropped, options.limit)
  }

  const scored: Array<ScoredMemory & Ordered> = []
  const add = (k: Kept, rescored: boolean) => {
    featuresOf(prepared, k.row, features)
    const logit = rescored ? k.score + correctionOf(scorer.trees, features, k.score) : k.score
    const score = probabilityOf(logit)
    const keywordScore = !withVectors
      ? score
      : probabilityOf(
          rescored ? k.keywordLogit + correctionOf(model.keywordsOnly.trees, features, k.keywordLogit) : k.keywordLogit
        )
    const relevance = Math.max(score, keywordScore)
    const relevant = relevance >= model.relevanceFloor
    if (options.relevantOnly && !relevant) return
    const cosine = query.cosines?.[k.row]
    const parts: ScoreParts = {
      semantic: cosine === undefined || Number.isNaN(cosine) ? null : cosine,
      keyword: features[featureIndex.keyword]!,
      relevance,
      time: features[featureIndex.time]!,
      importance: k.importance,
      recency: features[featureIndex.recency]!
    }
    scored.push({ memory: k.memory, row: k.row, score, importance: k.importance, parts, relevant })
  }
  kept.forEach((k, rank) => add(k, rank < reranked))
  for (const k of beyond) add(k, false)
  return scored
    .sort((a, b) => (outranks(a, b) ? -1 : 1))
    .slice(0, options.limit)
    .map(({ importance: _, ...memory }) => memory)
}

/**
 * The rows worth scoring, or undefined for every row. When only relevant memories are wanted
 * (injection), those that can reach the floor: a row with a relevance signal (a shared term, its own or
 * a neighbour's; a cosine among the best ranked; the period the message names; a hop), or one whose
 * ceiling reaches it — its own features, importance, recency and `timeAnswer` at their most, the
 * features the whole query shares and, with a vector, its own and its neighbours' cosines. Any other
 * row stays below the floor and would be left out anyway.
 */
const candidateRows = (
  prepared: PreparedQuery,
  model: RankingModel,
  options: RankingOptions
): ReadonlyArray<number> | undefined => {
  const { index, query } = prepared
  const rows = index.memories.length
  if (!options.relevantOnly || rows === 0) return undefined
  const { floorLogit, withVectors: scorer, keywordsOnly } = model
  // The features the whole query shares, read off any row.
  const shared = queryScratch
  featuresOf(prepared, 0, shared)
  const queryPartOf = (candidate: Scorer) => {
    let sum = 0
    for (const j of QUERY_FEATURE_INDEXES) sum += candidate.weights[j]! * shared[j]!
    return sum
  }
  const vectorCeilings = rowCeilingsOf(prepared, scorer)
  const keywordCeilings = rowCeilingsOf(prepared, keywordsOnly)
  const vectorQueryPart = queryPartOf(scorer)
  const keywordQueryPart = queryPartOf(keywordsOnly)
  const { cosines } = query
  const zWeight = scorer.weights[featureIndex.semanticZ]!
  const standoutWeight = scorer.weights[featureIndex.semanticStandout]!
  const neighbourWeight = scorer.weights[featureIndex.neighbourSemantic]!
  const { hops } = prepared.links
  const candidates: Array<number> = []
  for (let row = 0; row < rows; row++) {
    if (
      prepared.keywordScores[row]! > 0 ||
      prepared.semanticRanks.has(row) ||
      inQueryWindow(prepared, row) ||
      hops.has(row) ||
      previousShareOf(prepared, row) > 0 ||
      nextShareOf(prepared, row) > 0 ||
      nearShareOf(prepared, row) > 0
    ) {
      candidates.push(row)
      continue
    }
    const vectorCeiling = vectorCeilings[row]! + vectorQueryPart
    if (vectorCeiling >= floorLogit || keywordCeilings[row]! + keywordQueryPart >= floorLogit) candidates.push(row)
    else if (cosines !== undefined) {
      // What the semantic features (its own cosine's and its neighbours') add, which only the weights with vectors read.
      const z = Number.isNaN(cosines[row]!) ? 0 : cosineZ(prepared, row)
      const semantic =
        zWeight * semanticZOf(z) +
        standoutWeight * standoutOf(prepared, z) +
        neighbourWeight * neighbourSemanticOf(prepared, row)
      if (semantic >= floorLogit - vectorCeiling) candidates.push(row)
    }
  }
  return candidates
}

const ROW_FEATURE_INDEXES = ROW_FEATURES.map((name) => featureIndex[name])
const ROW_FEATURE_NAMES: ReadonlySet<FeatureName> = new Set(ROW_FEATURES)

/** Per index and scorer, `rowCeilingsOf` (an index never changes; the scorers are the model's two). */
const rowCeilingCache = new WeakMap<MemoryIndex, Map<Scorer, Float64Array>>()

/**
 * Each row's largest logit under a scorer with every relevance feature at 0, before the features the
 * whole query shares: the intercept, the row's own features (`ROW_FEATURES`) and the rest
 * (importance, recency) at the most they add. Computed the first time an index is ranked.
 */
const rowCeilingsOf = (prepared: PreparedQuery, scorer: Scorer): Float64Array => {
  let byScorer = rowCeilingCache.get(prepared.index)
  if (byScorer === undefined) {
    byScorer = new Map()
    rowCeilingCache.set(prepared.index, byScorer)
  }
  let ceilings = byScorer.get(scorer)
  if (ceilings === undefined) {
    ceilings = computeRowCeilings(prepared, scorer)
    byScorer.set(scorer, ceilings)
  }
  return ceilings
}

// Apart from the lookup above: it runs once per index, and the request path need not compile it.
const computeRowCeilings = ({ index, rowFeatures }: PreparedQuery, scorer: Scorer): Float64Array => {
  let base = scorer.intercept
  FEATURES.forEach((name, j) => {
    if (!RELEVANCE_FEATURES.has(name) && !QUERY_FEATURES.has(name) && !ROW_FEATURE_NAMES.has(name))
      base += Math.max(0, scorer.weights[j]! * FEATURE_MAXIMUM[name])
  })
  const ceilings = new Float64Array(index.memories.length)
  for (let row = 0; row < ceilings.length; row++) {
    let ceiling = base
    ROW_FEATURE_INDEXES.forEach((j, k) => {
      ceiling += scorer.weights[j]! * rowFeatures[row * ROW_FEATURE_INDEXES.length + k]!
    })
    ceilings[row] = ceiling
  }
  return ceilings
}

/** Inserts `item` in order into `list`, kept at most `capacity` long; the one that no longer fits, if any. */
const insertOrdered = <T extends Ordered>(list: Array<T>, item: T, capacity: number): T | undefined => {
  if (list.length === capacity && (capacity === 0 || !outranks(item, list[capacity - 1]!))) return item
  let at = list.length
  while (at > 0 && outranks(item, list[at - 1]!)) at--
  list.splice(at, 0, item)
  return list.length > capacity ? list.pop() : undefined
}

/** What orders two memories: the score (or, before the trees, the logit), importance, age, id. */
interface Ordered {
  readonly score: number
  readonly importance: number
  readonly memory: CandidateMemory
}

/** Higher score first; on a tie the more important (× decay), then the newer memory, then the smaller id (a stable order). */
const outranks = (a: Ordered, b: Ordered) =>
  a.score !== b.score
    ? a.score > b.score
    : a.importance !== b.importance
      ? a.importance > b.importance
      : a.memory.createdAt !== b.memory.createdAt
        ? a.memory.createdAt > b.memory.createdAt
        : a.memory.id < b.memory.id

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
  const scored: Array<ScoredMemory & Ordered> = []
  index.memories.forEach((memory, row) => {
    const cosine = cosines[row]!
    if (Number.isNaN(cosine) || (options.type !== undefined && memory.type !== options.type)) return
    if (options.accept !== undefined && !options.accept(memory)) return
    const parts = { semantic: cosine, keyword: 0, relevance: cosine, time: 0, importance: 0, recency: 0 }
    scored.push({ memory, row, score: cosine, importance: 0, parts, relevant: true })
  })
  return scored
    .sort((a, b) => (outranks(a, b) ? -1 : 1))
    .slice(0, options.limit)
    .map(({ importance: _, ...memory }) => memory)
}
