import type { AppConfigShape } from "../config/AppConfig.ts"
import type { MemoryType } from "../domain/Memory.ts"
import type { RankedMemory } from "../plugins/Plugin.ts"

/** A memory as injection ranks it: its text, what its score depends on, and its English lexemes. */
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
  /** English word stems of the content (`lexemesOf`). */
  readonly lexemes: ReadonlySet<string>
}

const DAY_MS = 86_400_000

/** The decay factor as of `now`: halved every half-life of the type since the memory was created, used or reinforced. */
export const decayFactorOf = (
  memory: Pick<CandidateMemory, "type" | "decayBase" | "createdAt" | "lastAccessedAt" | "reinforcedAt">,
  halfLives: AppConfigShape["memoryHalfLifeDays"],
  now: number
): number => {
  const fresh = Math.max(memory.createdAt, memory.lastAccessedAt ?? 0, memory.reinforcedAt ?? 0)
  return memory.decayBase * 0.5 ** (Math.max(0, now - fresh) / DAY_MS / halfLives[memory.type])
}

/** One matching lexeme counts about 0.67, two 0.8, three 0.86: more words in common, more relevant. */
const relevanceOf = (matches: number) => matches / (matches + 0.5)

/**
 * The memories most worth injecting, best first. A memory's score is
 *   relevanceWeight × m / (m + 0.5) + importanceWeight × importance × decayFactor
 *     + recencyWeight × 0.5^(ageDays / recencyHalfLifeDays)
 * where m is how many distinct lexemes of the latest user message the memory contains (both as
 * English word stems from `lexemesOf`) and age counts from the memory's creation.
 */
export const rankMemories = (
  memories: ReadonlyArray<CandidateMemory>,
  queryLexemes: ReadonlySet<string>,
  weights: AppConfigShape["injection"],
  halfLives: AppConfigShape["memoryHalfLifeDays"],
  now: number
): ReadonlyArray<RankedMemory> =>
  memories
    .map((memory) => {
      let matches = 0
      for (const lexeme of queryLexemes) if (memory.lexemes.has(lexeme)) matches++
      const score = weights.relevanceWeight * relevanceOf(matches) +
        weights.importanceWeight * memory.importance * decayFactorOf(memory, halfLives, now) +
        weights.recencyWeight * 0.5 ** (Math.max(0, now - memory.createdAt) / DAY_MS / weights.recencyHalfLifeDays)
      return { memory, score }
    })
    .sort((a, b) => b.score - a.score || b.memory.createdAt - a.memory.createdAt || (a.memory.id < b.memory.id ? -1 : 1))
    .slice(0, weights.maxMemories)
    .map(({ memory, score }) => ({ id: memory.id, content: memory.content, type: memory.type, score }))
