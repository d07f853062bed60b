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
  /** keywordShare of the memory remembered just after it. */
  "nextKeyword",
  /** The best keywordShare of the memories two and three steps before or after it in its conversation. */
  "nearKeyword",
  /** The larger semanticZ of the memories just before and just after it. */
  "neighbourSemantic",
  /** The share of the names in the query (the profile's names: `MemoryIndex.names`) the memory names, weighed by rarity. */
  "names",
  /** keywordShare when the memory starts with a name the query names: it is about who or what the question asks about. */
  "subject",
  /** Reached in one hop: the keywordShare of one of the query's best matches that names a name this memory names (`queryLinks.ts`). */
  "hop",
  /** The query asks when (or how long) and the memory names a time. */
  "timeAnswer",
  /** How many memories the profile holds: log2(n) / 14, n counted between 30 and 700, the sizes fitted (the fewer there are, the likelier each one is the answer). */
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
  "answersKeyword",
  "nextKeyword",
  "nearKeyword",
  "neighbourSemantic",
  "names",
  "subject",
  "hop"
])

/**
 * The features that make a memory a candidate when one is above 0 (a shared term, its own or a
 * neighbour's; among the first by cosine; the period the query names; reached through a name). A
 * memory with none of them is ranked only when its other features alone could reach the floor.
 */
export const CANDIDATE_FEATURES = [
  "keyword",
  "semanticRank",
  "time",
  "previousKeyword",
  "nextKeyword",
  "nearKeyword",
  "hop"
] as const satisfies ReadonlyArray<FeatureName>

/**
 * Weights never fitted below 0: the relevance features, and importance and recency (an important
 * or recent memory must never rank lower for it, whatever a benchmark's conversations prefer).
 */
export const NON_NEGATIVE_FEATURES: ReadonlySet<FeatureName> = new Set([
  ...RELEVANCE_FEATURES,
  "importance",
  "recency",
  "timeAnswer",
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
  "neighbourSemantic",
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

/** Where the semantic features stop growing. */
export const SEMANTIC_Z_CAP = 2
export const STANDOUT_CAP = 3

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
  nextKeyword: 1,
  nearKeyword: 1,
  neighbourSemantic: SEMANTIC_Z_CAP,
  names: 1,
  subject: 1,
  hop: 1,
  timeAnswer: 1,
  profileSize: 1,
  queryBestKeyword: 1,
  queryBestSemantic: SEMANTIC_Z_CAP
}
