import { Config, Context, Schema } from "effect"
import { numberBetween, positiveInt, positiveNumber, section } from "../config/values.ts"

export const RankingMode = Schema.Literals(["learned", "cosine"])
export type RankingMode = typeof RankingMode.Type

/** Variables of the hand-weighted ranking that the fitted model replaced: set, they stop the start with this word. */
const RETIRED_RANKING_VARIABLES = [
  "MEMORY_RANK_SEMANTIC_WEIGHT",
  "MEMORY_RANK_KEYWORD_WEIGHT",
  "MEMORY_RANK_IMPORTANCE_WEIGHT",
  "MEMORY_RANK_RECENCY_WEIGHT",
  "MEMORY_RANK_TIME_WEIGHT",
  "MEMORY_RANK_RELEVANCE_WEIGHT",
  "EMBEDDING_SIMILARITY_FLOOR",
  "EMBEDDING_SIMILARITY_FULL"
] as const

const retired = (name: string) =>
  Config.option(
    Config.schema(
      Schema.String.check(
        Schema.makeFilter(() => false, {
          expected:
            "unset (ranking is now a fitted model: see docs/retrieval.md; MEMORY_RELEVANCE_FLOOR is a probability)"
        })
      ),
      name
    )
  )

/**
 * How memories are weighed for a message (the fitted model of `retrieval/rankingModel.ts`), how fast
 * they decay, and how much of them is injected (`MEMORY_*`, `INJECTION_*`).
 */
export const retrievalFromEnv = section({
  ranking: section({
    /** `learned`: the fitted model; `cosine`: the query's cosine similarity alone (a reference point for benchmarks). */
    mode: Config.schema(RankingMode, "MEMORY_RANKING").pipe(Config.withDefault("learned" as const)),
    recencyHalfLifeDays: positiveNumber("MEMORY_RECENCY_HALF_LIFE_DAYS", 30),
    /** The probability a memory needs to be injected; none: the fitted model's own floor. */
    relevanceFloor: Config.option(numberBetween("MEMORY_RELEVANCE_FLOOR", { minimum: 0, maximum: 1 }))
  }),
  /** Half-life of a memory's decay factor, by memory type, in days. */
  memoryHalfLifeDays: section({
    fact: positiveNumber("MEMORY_HALF_LIFE_DAYS_FACT", 365),
    preference: positiveNumber("MEMORY_HALF_LIFE_DAYS_PREFERENCE", 180),
    event: positiveNumber("MEMORY_HALF_LIFE_DAYS_EVENT", 30),
    context: positiveNumber("MEMORY_HALF_LIFE_DAYS_CONTEXT", 60)
  }),
  injection: section({
    /** Budget of the injected block, in estimated tokens (4 characters each). */
    maxTokens: positiveInt("INJECTION_MAX_TOKENS", 1000),
    maxMemories: positiveInt("INJECTION_MAX_MEMORIES", 10),
    /** What the memories' lines may take of the block, in estimated tokens: how many go in is decided by their scores and this. */
    tokenBudget: positiveInt("INJECTION_TOKEN_BUDGET", 200)
  })
}).pipe(
  // Set, the retired variables would be silently ignored: say so instead.
  Config.flatMap((settings) => Config.all(RETIRED_RANKING_VARIABLES.map(retired)).pipe(Config.map(() => settings)))
)

export type RetrievalSettings = Config.Success<typeof retrievalFromEnv>

export class RetrievalConfig extends Context.Service<RetrievalConfig, RetrievalSettings>()(
  "gateway/retrieval/RetrievalConfig"
) {}
