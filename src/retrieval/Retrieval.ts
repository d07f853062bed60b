import { Context, Effect, Layer, Option, Schema } from "effect"
import type { MemoryType } from "../domain/Memory.ts"
import { Embedder, type QueryVector } from "../embedding/Embedder.ts"
import { cosineRows, normalize } from "../embedding/vectors.ts"
import { orderChangedFacts } from "./changedFacts.ts"
import type { ConversationQuery } from "./conversationQuery.ts"
import { allFit, cutForInjection, type InjectionCut } from "./injectionCut.ts"
import type { CandidateMemory, MemoryIndex } from "./MemoryIndex.ts"
import { RetrievalConfig } from "./RetrievalConfig.ts"
import shippedModel from "./rankingModel.json" with { type: "json" }
import { KEYWORDS_CONFIDENT, RankingModelFile, rankingModelOf } from "./rankingModel.ts"
import { type RankingSettings, type ScoredMemory, scoreByCosine, scoreMemories } from "./scoreMemories.ts"
import { weightedTermsOf } from "./terms.ts"
import { asksTime } from "./timeMentions.ts"
import { type TimeWindow, timeWindowOf } from "./timeWindow.ts"

/**
 * How the memories were chosen: `all` (no more memories than the injection limit: no ranking),
 * `fused` (vectors and keywords), `keyword` (no query vector).
 */
export const RETRIEVAL_MODES = ["all", "fused", "keyword"] as const
export type RetrievalMode = (typeof RETRIEVAL_MODES)[number]

/**
 * Why a ranking went without semantic similarity: `not_needed` when the keywords alone were
 * confident enough (their best memory at least `KEYWORDS_CONFIDENT` likely to answer).
 */
export const SEMANTIC_STATUSES = ["used", "off", "no_vectors", "not_needed", "timeout", "failed"] as const
export type SemanticStatus = (typeof SEMANTIC_STATUSES)[number]

export interface Retrieved {
  readonly memories: ReadonlyArray<ScoredMemory>
  /** The ids of those injection takes (`cutForInjection`): for injection all of them; for a search, those it would inject. */
  readonly injected: ReadonlySet<string>
  readonly mode: RetrievalMode
  readonly semantic: SemanticStatus
  readonly window: TimeWindow | undefined
}

const EMPTY_QUERY = { terms: new Map<string, number>(), cosines: undefined, window: undefined }

/** Rows scanned between two yields to the event loop (about half a millisecond of work). */
const ROWS_PER_SLICE = 1000

/**
 * Ranks a profile's memories for a message: the same ranking for injection and for the search
 * endpoint. Runs on the cached `MemoryIndex`, so it needs no database; the only wait is for the
 * query's vector, within its budget.
 */
/** Which memories a ranking may return (`memoryPredicate` of the app's `memoryFilter`). */
export type MemoryAccept = (memory: CandidateMemory) => boolean

export class Retrieval extends Context.Service<
  Retrieval,
  {
    /**
     * The memories to inject for the conversation (only relevant ones, at most the injection limit),
     * among those `accept` lets through (the app's `memoryFilter`).
     */
    readonly forInjection: (
      index: MemoryIndex,
      query: ConversationQuery,
      now: number,
      accept?: MemoryAccept | undefined
    ) => Effect.Effect<Retrieved>
    /**
     * The memories relevant to the conversation (at or above the relevance floor, at most the injection
     * limit), ranked however few there are: a namespace's shared knowledge, injected only where it
     * answers the message.
     */
    readonly relevant: (
      index: MemoryIndex,
      query: ConversationQuery,
      now: number,
      accept?: MemoryAccept | undefined
    ) => Effect.Effect<Retrieved>
    /** Every memory ranked, best first, flagged relevant or not. */
    readonly search: (
      index: MemoryIndex,
      query: ConversationQuery,
      now: number,
      options: {
        readonly limit: number
        readonly type: MemoryType | undefined
        readonly accept?: MemoryAccept | undefined
      }
    ) => Effect.Effect<Retrieved>
  }
>()("gateway/retrieval/Retrieval") {
  static readonly layer = Layer.effect(
    Retrieval,
    Effect.gen(function* () {
      const config = yield* RetrievalConfig
      const embedder = yield* Embedder
      const file = yield* Schema.decodeUnknownEffect(RankingModelFile)(shippedModel).pipe(Effect.orDie)
      const settings: RankingSettings = {
        model: rankingModelOf(file, Option.getOrUndefined(config.ranking.relevanceFloor)),
        features: { halfLives: config.memoryHalfLifeDays, recencyHalfLifeDays: config.ranking.recencyHalfLifeDays }
      }
      const cut: InjectionCut = {
        tokenBudget: config.injection.tokenBudget,
        maxMemories: config.injection.maxMemories,
        relativeFloor: settings.model.relativeFloor
      }
      const idsOf = (memories: ReadonlyArray<ScoredMemory>): ReadonlySet<string> =>
        new Set(memories.map((scored) => scored.memory.id))
      /** What injection takes of a ranking. */
      const injecting = (retrieved: Retrieved): Retrieved => {
        const memories = cutForInjection(retrieved.memories, cut)
        return { ...retrieved, memories, injected: idsOf(memories) }
      }

      /** Cosine similarity of the query to every memory, a slice at a time so a big profile never holds the event loop. */
      const cosinesOf = (index: MemoryIndex, vector: Float32Array) =>
        Effect.gen(function* () {
          const matrix = index.vectors!
          const out = new Float32Array(matrix.rows)
          for (let from = 0; from < matrix.rows; from += ROWS_PER_SLICE) {
            if (from > 0) yield* Effect.yieldNow
            cosineRows(matrix, vector, from, Math.min(matrix.rows, from + ROWS_PER_SLICE), out)
          }
          return out
        })

      /**
       * The query's vector: the latest message's, blended with the earlier messages' vectors that
       * the query cache already holds (their weights as in the terms; nothing more is embedded).
       */
      const blend = (latest: Float32Array, query: ConversationQuery) => {
        const earlier = query.earlier.flatMap(({ text, weight }) => {
          const vector = embedder.cached(text)
          return vector === undefined || vector.length !== latest.length ? [] : [{ vector, weight }]
        })
        if (earlier.length === 0) return latest
        const sum = Float32Array.from(latest)
        for (const { vector, weight } of earlier)
          for (let i = 0; i < sum.length; i++) sum[i] = sum[i]! + weight * vector[i]!
        return normalize(sum)
      }

      const rank = Effect.fnUntraced(function* (
        index: MemoryIndex,
        query: ConversationQuery,
        now: number,
        options: {
          readonly limit: number
          readonly type: MemoryType | undefined
          readonly relevantOnly: boolean
          readonly accept?: MemoryAccept | undefined
        }
      ) {
        const previous = query.earlier[0]
        const window =
          timeWindowOf(query.latest, now) ?? (previous === undefined ? undefined : timeWindowOf(previous.text, now))
        const terms = weightedTermsOf([{ text: query.latest, weight: 1 }, ...query.earlier])
        // Ranked deeper than the limit, so a newer memory about the subject of one in it can move up.
        const ranked = (cosines: Float32Array | undefined) =>
          config.ranking.mode === "cosine"
            ? scoreByCosine(index, cosines, options)
            : orderChangedFacts(
                scoreMemories(index, { terms, cosines, window, asksTime: asksTime(query.latest) }, settings, now, {
                  ...options,
                  limit: 2 * options.limit
                }),
                index
              ).slice(0, options.limit)
        const result = (
          memories: ReadonlyArray<ScoredMemory>,
          semantic: SemanticStatus,
          fused: boolean
        ): Retrieved => ({
          memories,
          injected: new Set(),
          mode: fused ? "fused" : "keyword",
          semantic,
          window
        })

        if (embedder.model === undefined) return result(ranked(undefined), "off", false)
        if (index.vectors === undefined || index.vectors.model !== embedder.model)
          return result(ranked(undefined), "no_vectors", false)
        if (query.latest.trim() === "") return result(ranked(undefined), "off", false)
        // The keywords rank first (a fraction of a millisecond), and the vector is computed only when
        // they are not confident. A vector already known (a repeated or retried message) is not
        // computed again.
        if (config.ranking.mode === "learned") {
          const byKeywords = ranked(undefined)
          if (byKeywords.some((scored) => scored.score >= KEYWORDS_CONFIDENT))
            return result(byKeywords, "not_needed", false)
        }
        const known = embedder.cached(query.latest)
        const vector: QueryVector =
          known === undefined ? yield* embedder.query(query.latest) : { _tag: "Vector", vector: known }
        if (vector._tag === "Vector" && vector.vector.length === index.vectors.dimensions) {
          return result(ranked(yield* cosinesOf(index, blend(vector.vector, query))), "used", true)
        }
        return result(ranked(undefined), vector._tag === "Unavailable" ? vector.reason : "failed", false)
      })

      // Untraced: it runs on every request, and a span costs more than a small profile's ranking.
      const forInjection = Effect.fnUntraced(function* (
        index: MemoryIndex,
        query: ConversationQuery,
        now: number,
        accept?: MemoryAccept | undefined
      ) {
        const limit = config.injection.maxMemories
        // Few and short enough to inject them all: nothing to rank, nothing to embed.
        if (allFit(index.memories, cut)) {
          const memories = [...scoreMemories(index, EMPTY_QUERY, settings, now, { limit, relevantOnly: false, accept })]
            // Nothing to rank by: the most important first.
            .sort((a, b) => b.parts.importance - a.parts.importance || b.memory.createdAt - a.memory.createdAt)
          return {
            memories,
            injected: idsOf(memories),
            mode: "all",
            semantic: "off",
            window: undefined
          } satisfies Retrieved
        }
        return injecting(yield* rank(index, query, now, { limit, type: undefined, relevantOnly: true, accept }))
      })

      const relevant = (index: MemoryIndex, query: ConversationQuery, now: number, accept?: MemoryAccept | undefined) =>
        rank(index, query, now, {
          limit: config.injection.maxMemories,
          type: undefined,
          relevantOnly: true,
          accept
        }).pipe(Effect.map(injecting))

      const search = Effect.fn("Retrieval.search")(function* (
        index: MemoryIndex,
        query: ConversationQuery,
        now: number,
        options: {
          readonly limit: number
          readonly type: MemoryType | undefined
          readonly accept?: MemoryAccept | undefined
        }
      ) {
        const found = yield* rank(index, query, now, { ...options, relevantOnly: false })
        // What injection would take of them: all when the whole profile fits, else the cut of the relevant ones.
        const injected = allFit(index.memories, cut)
          ? idsOf(found.memories)
          : idsOf(cutForInjection(found.memories, cut))
        return { ...found, injected }
      })

      return Retrieval.of({ forInjection, relevant, search })
    })
  ).pipe(Layer.provide([Embedder.layer]))
}
