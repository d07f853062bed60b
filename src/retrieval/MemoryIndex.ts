import type { MemorySource, MemoryType } from "../domain/Memory.ts"
import { emptyMatrix, type QuantizedVector, setRow, type VectorMatrix } from "../embedding/vectors.ts"
import { buildKeywordIndex, type KeywordIndex } from "./keywordIndex.ts"
import type { Terms } from "./terms.ts"

/** A memory as ranking sees it. */
export interface CandidateMemory {
  readonly id: string
  readonly content: string
  readonly type: MemoryType
  readonly importance: number
  /** The stored base decay factor (1.0 unless changed). */
  readonly decayBase: number
  readonly createdAt: number
  /** Updated in place when the memory is injected (the cached copy follows the database). */
  lastAccessedAt: number | null
  readonly reinforcedAt: number | null
  /** When the remembered thing happened, if known. */
  readonly occurredAt: number | null
  /** Situations and topics in which the memory matters (indexed with its content). */
  readonly cues: ReadonlyArray<string>
  /** The app's own labels and fields (`memoryFilter`); none when absent. */
  readonly tags?: ReadonlyArray<string>
  readonly metadata?: Readonly<Record<string, unknown>>
  /** Its namespace's category (`memoryFilter.categories`), what it was learned from, when it expires. */
  readonly category?: string | null
  readonly source?: MemorySource
  readonly expiresAt?: number | null
}

/**
 * Everything needed to rank one profile's current (not superseded) memories for any message:
 * the memories, their keyword index and their vectors. Built when the profile is loaded and kept
 * in the profile cache, so a request ranks without touching the database.
 */
export interface MemoryIndex {
  readonly memories: ReadonlyArray<CandidateMemory>
  readonly byId: ReadonlyMap<string, CandidateMemory>
  readonly keywords: KeywordIndex
  /** Undefined when no memory has a vector for the current model (or embeddings are off). */
  readonly vectors: VectorMatrix | undefined
  /**
   * Row → the row of the memory remembered just before it (at most `NEIGHBOUR_MS` earlier), or −1:
   * memories written together come from one conversation, and one often answers what the other asks.
   */
  readonly previous: Int32Array
  /** Row → 1 when the memory is a question (it asks rather than states), else 0. */
  readonly asks: Uint8Array
}

/** How far apart two memories may have been remembered to count as neighbours. */
const NEIGHBOUR_MS = 10 * 60_000

/** A text whose last sentence is a question. */
const ASKS = /\?["')\]]*\s*(\([^)]*\))?\s*$/

export interface IndexedMemory {
  readonly memory: CandidateMemory
  readonly terms: Terms
  /** Its vector for the current model, if it has one. */
  readonly vector: QuantizedVector | undefined
}

export const buildMemoryIndex = (rows: ReadonlyArray<IndexedMemory>, model: string | undefined): MemoryIndex => {
  const dimensions = rows.find((row) => row.vector !== undefined)?.vector?.bytes.length
  let vectors: VectorMatrix | undefined
  if (model !== undefined && dimensions !== undefined) {
    const matrix = emptyMatrix(model, dimensions, rows.length)
    rows.forEach((row, index) => {
      if (row.vector !== undefined && row.vector.bytes.length === dimensions) setRow(matrix, index, row.vector)
    })
    vectors = matrix
  }
  const memories = rows.map((row) => row.memory)
  const previous = new Int32Array(memories.length).fill(-1)
  const byCreation = memories.map((_, i) => i).sort((a, b) => memories[a]!.createdAt - memories[b]!.createdAt)
  for (let i = 1; i < byCreation.length; i++) {
    const row = byCreation[i]!
    const before = byCreation[i - 1]!
    if (memories[row]!.createdAt - memories[before]!.createdAt <= NEIGHBOUR_MS) {
      previous[row] = before
    }
  }
  return {
    memories,
    byId: new Map(memories.map((memory) => [memory.id, memory])),
    keywords: buildKeywordIndex(rows.map((row) => row.terms)),
    vectors,
    previous,
    asks: Uint8Array.from(memories, (memory) => (ASKS.test(memory.content) ? 1 : 0))
  }
}
