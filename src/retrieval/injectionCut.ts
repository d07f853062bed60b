import type { CandidateMemory } from "./MemoryIndex.ts"
import type { ScoredMemory } from "./scoreMemories.ts"

/** Characters of a memory's line besides its text: "- (event, as of 2026-05-08) ". */
const LINE_OVERHEAD = 28

/** What a memory's line costs in the context block, in estimated tokens (4 characters each, as the block counts). */
export const lineTokens = (content: string): number => Math.ceil((content.length + LINE_OVERHEAD) / 4)

export interface InjectionCut {
  /** Tokens the memories' lines may take (`INJECTION_TOKEN_BUDGET`). */
  readonly tokenBudget: number
  /** The most memories injected (`INJECTION_MAX_MEMORIES`). */
  readonly maxMemories: number
  /** A memory's probability must reach this share of the best one's (the fitted model's `relativeFloor`). */
  readonly relativeFloor: number
}

/**
 * How much of a ranking goes into the prompt, decided by the scores and the token budget: relevant
 * memories best first, each while its probability reaches `relativeFloor` × the best one's (the
 * weak tail of a strong answer stays out) and its line fits what is left of the budget (a long one
 * that does not is passed over for a shorter one after it), at most `maxMemories`. Nothing relevant:
 * nothing injected.
 */
export const cutForInjection = (
  ranked: ReadonlyArray<ScoredMemory>,
  cut: InjectionCut
): ReadonlyArray<ScoredMemory> => {
  let best = 0
  for (const scored of ranked) if (scored.relevant && scored.score > best) best = scored.score
  const kept: Array<ScoredMemory> = []
  let left = cut.tokenBudget
  for (const scored of ranked) {
    if (kept.length === cut.maxMemories) break
    if (!scored.relevant || scored.score < cut.relativeFloor * best) continue
    const tokens = lineTokens(scored.memory.content)
    if (tokens > left) continue
    left -= tokens
    kept.push(scored)
  }
  return kept
}

/** Whether all of these memories fit the budget and the count: then nothing needs choosing. */
export const allFit = (memories: ReadonlyArray<CandidateMemory>, cut: InjectionCut): boolean => {
  if (memories.length > cut.maxMemories) return false
  let tokens = 0
  for (const memory of memories) tokens += lineTokens(memory.content)
  return tokens <= cut.tokenBudget
}
