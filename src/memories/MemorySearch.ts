import { Clock, Context, DateTime, Effect, Layer, Option, type Schema } from "effect"
import { ProfileNotFound } from "../domain/errors.ts"
import { Memory, MemoryId, type MemoryType } from "../domain/Memory.ts"
import { decayFactorOf } from "../domain/memoryDecay.ts"
import type { Profile } from "../domain/Profile.ts"
import { singleQuery } from "../retrieval/conversationQuery.ts"
import { type MemoryFilter, memoryPredicate } from "../retrieval/memoryFilter.ts"
import { Retrieval, type SemanticStatus } from "../retrieval/Retrieval.ts"
import { RetrievalConfig } from "../retrieval/RetrievalConfig.ts"
import type { ScoreParts } from "../retrieval/scoreMemories.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { DEFAULT_SEARCH_RESULTS } from "./searchRequest.ts"

/** A memory as the search found it: the memory, its score, and the score's parts. */
export type FoundMemory = Schema.Struct.Type<typeof Memory.fields> & {
  readonly score: number
  /** Above the relevance floor: injection would consider it. */
  readonly relevant: boolean
  /** Injection would take it: within the token budget and near enough the best score (`INJECTION_TOKEN_BUDGET`). */
  readonly injected: boolean
  readonly scoreParts: ScoreParts
}

/** A search's memories, best first, and how they were ranked. */
export interface MemorySearchResult {
  readonly memories: ReadonlyArray<FoundMemory>
  readonly retrieval: {
    readonly mode: "fused" | "keyword"
    readonly semantic: SemanticStatus
    /** The time period the text names, which the ranking favoured (null when it names none). */
    readonly period: { readonly from: DateTime.Utc; readonly to: DateTime.Utc; readonly phrase: string } | null
    /** The profile's memories without a vector yet (found by keywords alone until their `embed` job runs). */
    readonly unembedded: number
  }
}

export interface MemorySearchOptions {
  readonly limit?: number | undefined
  readonly type: MemoryType | undefined
  /** Only memories with these tags and metadata. */
  readonly filter?: MemoryFilter | undefined
  /** Rank as of this moment (ms) instead of now. */
  readonly at?: number | undefined
}

/**
 * A profile's current memories ranked for a text exactly as injection ranks them (the cached
 * snapshot, the same fused ranking), with each score's parts: what `POST …/memories/search` and the
 * MCP server's `search_memories` answer.
 */
export class MemorySearch extends Context.Service<
  MemorySearch,
  {
    readonly search: (
      profile: Profile,
      text: string,
      options: MemorySearchOptions
    ) => Effect.Effect<MemorySearchResult, ProfileNotFound>
  }
>()("gateway/memories/MemorySearch") {
  static readonly layer = Layer.effect(
    MemorySearch,
    Effect.gen(function* () {
      const cache = yield* SnapshotCache
      const retrieval = yield* Retrieval
      const halfLives = (yield* RetrievalConfig).memoryHalfLifeDays

      const search = Effect.fn("Memories.search")(function* (
        profile: Profile,
        text: string,
        options: MemorySearchOptions
      ) {
        const loaded = yield* cache.snapshot(profile)
        if (Option.isNone(loaded)) return yield* new ProfileNotFound({ ref: profile.externalId })
        const snapshot = loaded.value
        const now = options.at ?? (yield* Clock.currentTimeMillis)
        const found = yield* retrieval.search(snapshot.memories, singleQuery(text), now, {
          limit: options.limit ?? DEFAULT_SEARCH_RESULTS,
          type: options.type,
          accept: memoryPredicate(options.filter)
        })
        return {
          memories: found.memories.map(({ memory, parts, relevant, score }) => ({
            ...new Memory({
              id: MemoryId.make(memory.id),
              content: memory.content,
              type: memory.type,
              importance: memory.importance,
              decayFactor: decayFactorOf(memory, halfLives, now),
              cues: memory.cues,
              createdAt: DateTime.makeUnsafe(memory.createdAt),
              lastAccessedAt: memory.lastAccessedAt === null ? null : DateTime.makeUnsafe(memory.lastAccessedAt),
              occurredAt: memory.occurredAt === null ? null : DateTime.makeUnsafe(memory.occurredAt),
              // The ranking only holds current memories: superseded ones are never injected.
              supersededBy: null,
              tags: memory.tags ?? [],
              metadata: memory.metadata ?? {},
              category: memory.category ?? null,
              source: memory.source ?? "text",
              expiresAt:
                memory.expiresAt === undefined || memory.expiresAt === null
                  ? null
                  : DateTime.makeUnsafe(memory.expiresAt)
            }),
            score,
            relevant,
            injected: found.injected.has(memory.id),
            scoreParts: parts
          })),
          retrieval: {
            mode: found.mode === "fused" ? ("fused" as const) : ("keyword" as const),
            semantic: found.semantic,
            unembedded: snapshot.memories.unembedded,
            period:
              found.window === undefined
                ? null
                : {
                    from: DateTime.makeUnsafe(found.window.start),
                    to: DateTime.makeUnsafe(found.window.end),
                    phrase: found.window.phrase
                  }
          }
        }
      })

      return MemorySearch.of({ search })
    })
  ).pipe(Layer.provide([SnapshotCache.layer, Retrieval.layer]))
}
