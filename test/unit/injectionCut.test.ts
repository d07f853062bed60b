import { describe, expect, it } from "vitest"
import { allFit, cutForInjection, lineTokens } from "../../src/retrieval/injectionCut.ts"
import type { CandidateMemory } from "../../src/retrieval/MemoryIndex.ts"
import type { ScoredMemory } from "../../src/retrieval/scoreMemories.ts"

const memory = (content: string): CandidateMemory => ({
  id: content,
  content,
  type: "fact",
  importance: 0.5,
  decayBase: 1,
  createdAt: 0,
  lastAccessedAt: null,
  reinforcedAt: null,
  occurredAt: null,
  cues: []
})

const scored = (content: string, score: number, relevant = true): ScoredMemory => ({
  memory: memory(content),
  row: 0,
  score,
  relevant,
  parts: { semantic: null, keyword: 0, relevance: score, time: 0, importance: 0.5, recency: 1 }
})

const cut = { tokenBudget: 200, maxMemories: 10, relativeFloor: 0.25 }
const ids = (memories: ReadonlyArray<ScoredMemory>) => memories.map((m) => m.memory.id)

describe("how much of a ranking is injected", () => {
  it("keeps what comes near the best score and drops the weak tail", () => {
    const ranked = [scored("a", 0.8), scored("b", 0.5), scored("c", 0.21), scored("d", 0.19), scored("e", 0.05)]
    expect(ids(cutForInjection(ranked, cut))).toEqual(["a", "b", "c"])
    // With no strong answer, weaker evidence still goes in.
    const weak = [scored("a", 0.08), scored("b", 0.05), scored("c", 0.03)]
    expect(ids(cutForInjection(weak, cut))).toEqual(["a", "b", "c"])
  })

  it("injects nothing when nothing is relevant", () => {
    expect(cutForInjection([scored("a", 0.01, false), scored("b", 0.005, false)], cut)).toEqual([])
  })

  it("stays within the token budget, passing over a long memory for shorter ones after it", () => {
    const long = "x".repeat(600)
    const ranked = [scored("short one", 0.9), scored(long, 0.8), scored("short two", 0.7)]
    expect(lineTokens(long)).toBeGreaterThan(150)
    expect(ids(cutForInjection(ranked, { ...cut, tokenBudget: 60 }))).toEqual(["short one", "short two"])
    const many = Array.from({ length: 30 }, (_, i) => scored(`memory number ${i}`, 0.9 - i * 0.01))
    const taken = cutForInjection(many, { ...cut, tokenBudget: 10_000 })
    expect(taken).toHaveLength(10)
    const tokens = cutForInjection(many, cut).reduce((sum, m) => sum + lineTokens(m.memory.content), 0)
    expect(tokens).toBeLessThanOrEqual(200)
  })

  it("needs no choice when every memory fits the count and the budget", () => {
    expect(allFit([memory("Likes tea"), memory("Plays chess")], cut)).toBe(true)
    expect(allFit([memory("x".repeat(900))], cut)).toBe(false)
    expect(
      allFit(
        Array.from({ length: 11 }, (_, i) => memory(`m${i}`)),
        cut
      )
    ).toBe(false)
  })
})
