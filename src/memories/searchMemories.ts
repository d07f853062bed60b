import { Clock, DateTime, Effect, Option } from "effect"
import { ProfileNotFound } from "../domain/errors.ts"
import { Memory, MemoryId, type MemoryType } from "../domain/Memory.ts"
import { decayFactorOf } from "../domain/memoryDecay.ts"
import type { Profile } from "../domain/Profile.ts"
import { singleQuery } from "../retrieval/conversationQuery.ts"
import { Retrieval } from "../retrieval/Retrieval.ts"
import { RetrievalConfig } from "../retrieval/RetrievalConfig.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { DEFAULT_SEARCH_RESULTS } from "./searchRequest.ts"

/**
 * A profile's current memories ranked for a text exactly as injection ranks them (the cached
 * snapshot, the same fused ranking), with each score's parts: what `POST …/memories/search` and the
 * MCP server's `search_memories` answer.
 */
export const searchMemories = Effect.fn("Memories.search")(function* (
  profile: Profile,
  text: string,
  options: {
    readonly limit?: number | undefined
    readonly type: MemoryType | undefined
    /** Rank as of this moment (ms) instead of now. */
    readonly at?: number | undefined
  }
) {
  const loaded = yield* (yield* SnapshotCache).snapshot(profile)
  if (Option.isNone(loaded)) return yield* new ProfileNotFound({ ref: profile.externalId })
  const snapshot = loaded.value
  const halfLives = (yield* RetrievalConfig).memoryHalfLifeDays
  const now = options.at ?? (yield* Clock.currentTimeMillis)
  const found = yield* (yield* Retrieval).search(snapshot.memories, singleQuery(text), now, {
    limit: options.limit ?? DEFAULT_SEARCH_RESULTS,
    type: options.type
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
        supersededBy: null
      }),
      score,
      relevant,
      scoreParts: parts
    })),
    retrieval: {
      mode: found.mode === "fused" ? ("fused" as const) : ("keyword" as const),
      semantic: found.semantic,
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
