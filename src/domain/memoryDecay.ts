import type { MemoryType } from "./Memory.ts"

/**
 * The one decay rule for memories. A memory's decay factor is its stored base factor, halved for
 * every half-life of its type since it was last fresh (created, used or reinforced):
 *
 *   decay = base × DECAY_PER_HALF_LIFE ^ (max(0, now − freshAt) / DAY_MS / halfLife[type])
 *
 * Ranking and the API compute it here; SQL that orders or lists by it renders the same rule from
 * these constants (`store/memoryDecay.ts`; test/unit/memoryDecay.test.ts holds the two together).
 */

/** What is left of the factor after one half-life. */
export const DECAY_PER_HALF_LIFE = 0.5

export const DAY_MS = 86_400_000

/** Half-life of the decay factor, in days, by memory type (`MEMORY_HALF_LIFE_DAYS_*`). */
export type MemoryHalfLives = { readonly [Type in MemoryType]: number }

/** The moments that make a memory fresh again; the latest one counts (a missing one does not). */
export const FRESHNESS_MOMENTS = ["createdAt", "lastAccessedAt", "reinforcedAt"] as const

export interface DecayingMemory {
  readonly type: MemoryType
  /** The stored base decay factor (1.0 unless changed). */
  readonly decayBase: number
  readonly createdAt: number
  readonly lastAccessedAt: number | null
  readonly reinforcedAt: number | null
}

/** The decay factor as of `now` (ms). */
export const decayFactorOf = (memory: DecayingMemory, halfLives: MemoryHalfLives, now: number): number => {
  // FRESHNESS_MOMENTS read by name (a unit test holds the two together): ranking calls this for every
  // memory it scores, and reading them by a computed key is a slow generic lookup each time.
  const freshAt = Math.max(0, memory.createdAt, memory.lastAccessedAt ?? 0, memory.reinforcedAt ?? 0)
  return memory.decayBase * DECAY_PER_HALF_LIFE ** (Math.max(0, now - freshAt) / DAY_MS / halfLives[memory.type])
}
