import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import type { MemoryType } from "../domain/Memory.ts"
import { Embedder } from "../embedding/Embedder.ts"
import type { MemoryIndex } from "./MemoryIndex.ts"
import { type RankingSettings, type ScoredMemory, scoreMemories } from "./scoreMemories.ts"
import { queryTermsOf } from "./terms.ts"
import { type TimeWindow, timeWindowOf } from "./timeWindow.ts"
import { cosineRows } from "./vectors.ts"

/**
 * How the memories were chosen: `all` (no more memories than the injection limit: no ranking),
 * `fused` (vectors and keywords), `keyword` (no query vector).
 */
export type RetrievalMode = "all" | "fused" | "keyword"

/** Why a ranking went without semantic similarity. */
export type SemanticStatus = "used" | "off" | "no_vectors" | "timeout" | "failed"

export interface Retrieved {
  readonly memories: ReadonlyArray<ScoredMemory>
  readonly mode: RetrievalMode
  readonly semantic: SemanticStatus
  readonly window: TimeWindow | undefined
}

/** Rows scanned between two yields to the event loop (about half a millisecond of work). */
const ROWS_PER_SLICE = 1000

/**
 * Ranks a profile's memories for a message: the same ranking for injection and for the search
 * endpoint. Runs on the cached `MemoryIndex`, so it needs no database; the only wait is for the
 * query's vector, within its budget.
 */
export class Retrieval extends Context.Service<Retrieval, {
  /** The memories to inject for the latest user message (only relevant ones, at most the injection limit). */
  readonly forInjection: (index: MemoryIndex, text: string, now: number) => Effect.Effect<Retrieved>
  /** Every memory ranked, best first, flagged relevant or not. */
  readonly search: (
    index: MemoryIndex,
    text: string,
    now: number,
    options: { readonly limit: number; readonly type: MemoryType | undefined }
  ) => Effect.Effect<Retrieved>
}>()("gateway/retrieval/Retrieval") {
  static readonly layer = Layer.effect(
    Retrieval,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const embedder = yield* Embedder
      const settings: RankingSettings = {
        weights: config.ranking,
        similarityFloor: embedder.settings.similarityFloor,
        similarityFull: embedder.settings.similarityFull,
        halfLives: config.memoryHalfLifeDays
      }

      /** Cosine similarity of the query to every memory, a slice at a time so a big profile never holds the event loop. */
      const cosinesOf = (index: MemoryIndex, vector: Float32Array) =>
        Effect.gen(function*() {
          const matrix = index.vectors!
          const out = new Float32Array(matrix.rows)
          for (let from = 0; from < matrix.rows; from += ROWS_PER_SLICE) {
            if (from > 0) yield* Effect.yieldNow
            cosineRows(matrix, vector, from, Math.min(matrix.rows, from + ROWS_PER_SLICE), out)
          }
          return out
        })

      const rank = Effect.fnUntraced(function*(
        index: MemoryIndex,
        text: string,
        now: number,
        options: { readonly limit: number; readonly type: MemoryType | undefined; readonly relevantOnly: boolean }
      ) {
        const window = timeWindowOf(text, now)
        const terms = queryTermsOf(text)
        let semantic: SemanticStatus = "off"
        let cosines: Float32Array | undefined
        if (embedder.model !== undefined) {
          if (index.vectors === undefined || index.vectors.model !== embedder.model) semantic = "no_vectors"
          else if (text.trim() !== "") {
            const query = yield* embedder.query(text)
            if (query._tag === "Vector" && query.vector.length === index.vectors.dimensions) {
              cosines = yield* cosinesOf(index, query.vector)
              semantic = "used"
            } else {
              semantic = query._tag === "Unavailable" ? query.reason : "failed"
            }
          }
        }
        const memories = scoreMemories(index, { terms, cosines, window }, settings, now, options)
        return { memories, mode: cosines === undefined ? "keyword" : "fused", semantic, window } satisfies Retrieved
      })

      // Untraced: it runs on every request, and a span costs more than a small profile's ranking.
      const forInjection = Effect.fnUntraced(function*(index: MemoryIndex, text: string, now: number) {
        const limit = config.injection.maxMemories
        // Few enough to inject them all: nothing to rank, nothing to embed.
        if (index.memories.length <= limit) {
          const memories = scoreMemories(
            index,
            { terms: new Set(), cosines: undefined, window: undefined },
            settings,
            now,
            { limit, relevantOnly: false }
          )
          return { memories, mode: "all", semantic: "off", window: undefined } satisfies Retrieved
        }
        return yield* rank(index, text, now, { limit, type: undefined, relevantOnly: true })
      })

      const search = Effect.fn("Retrieval.search")(function*(
        index: MemoryIndex,
        text: string,
        now: number,
        options: { readonly limit: number; readonly type: MemoryType | undefined }
      ) {
        return yield* rank(index, text, now, { ...options, relevantOnly: false })
      })

      return Retrieval.of({ forInjection, search })
    })
  )
}
