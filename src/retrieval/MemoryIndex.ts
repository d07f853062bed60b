import type { MemorySource, MemoryType } from "../domain/Memory.ts"
import { emptyMatrix, type QuantizedVector, setRow, type VectorMatrix } from "../embedding/vectors.ts"
import { buildKeywordIndex, type KeywordIndex } from "./keywordIndex.ts"
import type { Terms } from "./terms.ts"
import { mentionedWindow, statesTime } from "./timeMentions.ts"

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
  /** How many of the memories have no vector for the current model yet (all of them with embeddings off). */
  readonly unembedded: number
  /**
   * Row → the row of the memory remembered just before it (at most `NEIGHBOUR_MS` earlier, not at the
   * same moment), or −1: memories written one after another come from one conversation, and one often
   * answers what the other asks.
   */
  readonly previous: Int32Array
  /** Row → the row of the memory remembered just after it (at most `NEIGHBOUR_MS` later), or −1. */
  readonly next: Int32Array
  /** Row → 1 when the memory is a question (it asks rather than states), else 0. */
  readonly asks: Uint8Array
  /** Row → 1 when the memory names a time (when it happened, for how long: `timeMentions.ts`), else 0. */
  readonly statesTime: Uint8Array
  /**
   * The period each memory's text names, read from when it was said, as [start, end) at 2 × row
   * (NaN: it names none): "yesterday" in a memory of 17 March is 16 March.
   */
  readonly mentioned: Float64Array
  /**
   * The profile's names: stems its memories write with a capital where no sentence starts
   * (`Terms.named`). Every memory holding one names it, however that memory writes it.
   */
  readonly names: ReadonlySet<string>
  /** Row → the name the memory starts with (who or what it is about), if it starts with one. */
  readonly subjects: ReadonlyArray<string | undefined>
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
  const next = new Int32Array(memories.length).fill(-1)
  const byCreation = memories.map((_, i) => i).sort((a, b) => memories[a]!.createdAt - memories[b]!.createdAt)
  for (let i = 1; i < byCreation.length; i++) {
    const row = byCreation[i]!
    const before = byCreation[i - 1]!
    const apart = memories[row]!.createdAt - memories[before]!.createdAt
    // Written at one moment (one extraction's memories) they are parallel facts, not a sequence.
    if (apart > 0 && apart <= NEIGHBOUR_MS) {
      previous[row] = before
      next[before] = row
    }
  }
  const mentioned = new Float64Array(2 * memories.length).fill(Number.NaN)
  const timed = Uint8Array.from(memories, (memory, row) => {
    if (!statesTime(memory.content)) return 0
    const window = mentionedWindow(memory.content, memory.occurredAt ?? memory.createdAt)
    if (window !== undefined) {
      mentioned[2 * row] = window.start
      mentioned[2 * row + 1] = window.end
    }
    return 1
  })
  const names = new Set(rows.flatMap((row) => row.terms.named))
  return {
    memories,
    byId: new Map(memories.map((memory) => [memory.id, memory])),
    keywords: buildKeywordIndex(rows.map((row) => row.terms)),
    vectors,
    unembedded: rows.filter((row) => row.vector === undefined || row.vector.bytes.length !== dimensions).length,
    previous,
    next,
    asks: Uint8Array.from(memories, (memory) => (ASKS.test(memory.content) ? 1 : 0)),
    statesTime: timed,
    mentioned,
    names,
    subjects: rows.map((row) =>
      row.terms.first !== undefined && names.has(row.terms.first) ? row.terms.first : undefined
    )
  }
}
