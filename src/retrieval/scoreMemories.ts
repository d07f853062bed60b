import type { AppConfigShape } from "../config/AppConfig.ts"
import type { MemoryType } from "../domain/Memory.ts"
import { DAY_MS, decayFactorOf } from "../domain/memoryDecay.ts"
import { keywordCandidates, type KeywordQuery, keywordQuery, keywordScore } from "./keywordIndex.ts"
import type { CandidateMemory, MemoryIndex } from "./MemoryIndex.ts"
import { inWindow, specificityOf, type TimeWindow } from "./timeWindow.ts"

// Kept for the modules that import the decay rule from here; its home is domain/memoryDecay.ts.

/** What a query brings to ranking. */
export interface RankingQuery {
  /** The query's terms (`queryTermsOf`). */
  readonly terms: ReadonlySet<string>
  /** Cosine similarity of the query vector to each row of the index's vectors (NaN: the memory has none); undefined without a query vector. */
  readonly cosines: Float32Array | undefined
  /** The period the query asks about, if any. */
  readonly window: TimeWindow | undefined
}

export interface RankingSettings {
  readonly weights: AppConfigShape["ranking"]
  /** Cosine similarity mapped to 0 and to 1 of semantic relevance. */
  readonly similarityFloor: number
  readonly similarityFull: number
  readonly halfLives: AppConfigShape["memoryHalfLifeDays"]
}

/** The parts of a memory's score, each in [0, 1] before weighting. */
export interface ScoreParts {
  /** Semantic relevance from the vectors; null when the query or the memory has no vector. */
  readonly semantic: number | null
  /** Keyword relevance (normalised BM25). */
  readonly keyword: number
  /** Semantic and keyword relevance combined (their weighted mean; keyword alone without a vector). */
  readonly relevance: number
  /** When the memory happened in the period the query names: 1 for a day or week, less for longer periods. */
  readonly time: number
  /** importance × decay factor. */
  readonly importance: number
  /** 0.5^(age / recency half-life). */
  readonly recency: number
}

export interface ScoredMemory {
  readonly memory: CandidateMemory
  readonly score: number
  readonly parts: ScoreParts
  /** Relevant enough to inject: relevance + time weight × time ≥ the relevance floor. */
  readonly relevant: boolean
}

export interface RankingOptions {
  readonly limit: number
  readonly type?: MemoryType | undefined
  /** Leave out memories below the relevance floor (injection does; search lists them, flagged). */
  readonly relevantOnly: boolean
}

/** When an event happened: its `occurredAt`, else (for events) when it was remembered. */
export const eventTimeOf = (memory: CandidateMemory): number | null =>
  memory.occurredAt ?? (memory.type === "event" ? memory.createdAt : null)

/**
 * Ranks a profile's memories for a query. With w the `MEMORY_RANK_*` weights:
 *
 *   semantic  = clamp((cosine − similarityFloor) / (similarityFull − similarityFloor), 0, 1)
 *   keyword   = BM25(query, memory) / BM25 of an average memory containing every query term
 *   relevance = (w.semantic × semantic + w.keyword × keyword) / (w.semantic + w.keyword)
 *               (keyword alone when the query or the memory has no vector)
 *   time      = if the memory happened in the period the query names: 1 for a period of up to about
 *               two weeks, 0.6 up to about two months, 0.25 beyond; else 0
 *   score     = relevance + w.time × time + w.importance × importance × decay
 *               + w.recency × 0.5^(ageDays / recencyHalfLifeDays)
 *
 * A memory is relevant when relevance + w.time × time ≥ the relevance floor; injection takes the
 * best `limit` relevant memories, so a message that no memory answers gets none.
 */
export const scoreMemories = (
  index: MemoryIndex,
  query: RankingQuery,
  settings: RankingSettings,
  now: number,
  options: RankingOptions
): ReadonlyArray<ScoredMemory> => {
  const { weights } = settings
  const keywords = keywordQuery(index.keywords, query.terms)
  const similaritySpan = Math.max(1e-6, settings.similarityFull - settings.similarityFloor)
  const relevanceWeights = weights.semanticWeight + weights.keywordWeight
  const top: Array<ScoredMemory> = []

  for (const row of candidateRows(index, query, keywords, settings, options)) {
    const memory = index.memories[row]!
    if (options.type !== undefined && memory.type !== options.type) continue
    const keyword = keywordScore(keywords, row)
    const cosine = query.cosines?.[row]
    const semantic = cosine === undefined || Number.isNaN(cosine)
      ? null
      : Math.min(1, Math.max(0, (cosine - settings.similarityFloor) / similaritySpan))
    const relevance = semantic === null || relevanceWeights === 0
      ? keyword
      : (weights.semanticWeight * semantic + weights.keywordWeight * keyword) / relevanceWeights
    const eventTime = query.window === undefined ? null : eventTimeOf(memory)
    const time = eventTime !== null && query.window !== undefined && inWindow(query.window, eventTime)
      ? specificityOf(query.window)
      : 0
    const relevant = relevance + weights.timeWeight * time >= weights.relevanceFloor
    if (options.relevantOnly && !relevant) continue

    const importance = memory.importance * decayFactorOf(memory, settings.halfLives, now)
    const recency = 0.5 ** (Math.max(0, now - memory.createdAt) / DAY_MS / weights.recencyHalfLifeDays)
    const score = relevance + weights.timeWeight * time + weights.importanceWeight * importance + weights.recencyWeight * recency
    if (top.length === options.limit && !outranks(score, memory, top[top.length - 1]!)) continue
    const scored = { memory, score, parts: { semantic, keyword, relevance, time, importance, recency }, relevant }
    // Insert in order (the list is at most `limit` long).
    let at = top.length
    while (at > 0 && outranks(score, memory, top[at - 1]!)) at--
    top.splice(at, 0, scored)
    if (top.length > options.limit) top.pop()
  }
  return top
}

/**
 * The rows worth scoring. When only relevant memories are wanted (injection): those closer than the
 * similarity floor, those whose shared terms could reach the relevance floor on their own, and those
 * of the period the query names, since no other memory can be relevant. Otherwise every row.
 */
const candidateRows = (
  index: MemoryIndex,
  query: RankingQuery,
  keywords: KeywordQuery,
  settings: RankingSettings,
  options: RankingOptions
): Iterable<number> => {
  const rows = index.memories.length
  const floor = settings.weights.relevanceFloor
  if (!options.relevantOnly || floor <= 0) return rangeOf(rows)
  const candidates = new Set(keywordCandidates(keywords, floor))
  const { cosines, window } = query
  if (cosines !== undefined || window !== undefined) {
    for (let row = 0; row < rows; row++) {
      if (cosines !== undefined && cosines[row]! > settings.similarityFloor) candidates.add(row)
      else if (window !== undefined) {
        const at = eventTimeOf(index.memories[row]!)
        if (at !== null && inWindow(window, at)) candidates.add(row)
      }
    }
  }
  return candidates
}

function* rangeOf(count: number) {
  for (let i = 0; i < count; i++) yield i
}

/** Higher score first; on a tie the newer memory, then the smaller id (a stable order). */
const outranks = (score: number, memory: CandidateMemory, other: ScoredMemory) =>
  score !== other.score
    ? score > other.score
    : memory.createdAt !== other.memory.createdAt
    ? memory.createdAt > other.memory.createdAt
    : memory.id < other.memory.id
