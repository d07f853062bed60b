import { describe, expect, it } from "vitest"
import { ASSISTANT_WEIGHT, conversationQueryOf, PREVIOUS_USER_WEIGHT } from "../../src/retrieval/conversationQuery.ts"
import { FEATURE_COUNT, type FeatureName, featureIndex } from "../../src/retrieval/featureSet.ts"
import { buildMemoryIndex, type CandidateMemory } from "../../src/retrieval/MemoryIndex.ts"
import { chanceMaximumZ, featuresOf, prepareQuery } from "../../src/retrieval/rankingFeatures.ts"
import { queryTermsOf, termsOf, weightedTermsOf } from "../../src/retrieval/terms.ts"

const DAY = 86_400_000
const MINUTE = 60_000
const now = Date.UTC(2026, 10, 23, 15)
const settings = { halfLives: { fact: 365, preference: 180, event: 30, context: 60 }, recencyHalfLifeDays: 30 }

const memory = (content: string, i: number, createdAt = now - (100 - i) * DAY): CandidateMemory => ({
  id: `m${i}`,
  content,
  type: "fact",
  importance: 0.5,
  decayBase: 1,
  createdAt,
  lastAccessedAt: null,
  reinforcedAt: null,
  occurredAt: null,
  cues: []
})

const indexOf = (memories: ReadonlyArray<CandidateMemory>) =>
  buildMemoryIndex(
    memories.map((m) => ({ memory: m, terms: termsOf(m.content), vector: undefined })),
    undefined
  )

const featureOf = (prepared: ReturnType<typeof prepareQuery>, row: number, name: FeatureName) => {
  const out = new Float64Array(FEATURE_COUNT)
  featuresOf(prepared, row, out)
  return out[featureIndex[name]]!
}

describe("ranking features", () => {
  it("read cosines relative to the query's own: a z-score, never below 0, and how far it stands above chance", () => {
    const memories = Array.from({ length: 100 }, (_, i) => memory(`Note ${i}`, i))
    const index = indexOf(memories)
    // Everything at 0.30 ± a little, one memory at 0.45.
    const cosines = Float32Array.from({ length: 100 }, (_, i) => (i === 7 ? 0.45 : 0.3 + ((i % 5) - 2) * 0.01))
    const prepared = prepareQuery(index, { terms: new Map(), cosines, window: undefined }, now, settings)
    expect(featureOf(prepared, 7, "semanticZ")).toBeGreaterThan(0.5)
    expect(featureOf(prepared, 7, "semanticStandout")).toBeGreaterThan(0)
    expect(featureOf(prepared, 7, "semanticRank")).toBe(1)
    // Below the mean: 0, not negative.
    expect(featureOf(prepared, 0, "semanticZ")).toBe(0)
    // The same cosines without the outlier: nothing stands out.
    const flat = prepareQuery(
      index,
      { terms: new Map(), cosines: cosines.map((c, i) => (i === 7 ? 0.3 : c)), window: undefined },
      now,
      settings
    )
    expect(
      Array.from({ length: 100 }, (_, row) => featureOf(flat, row, "semanticStandout")).every((v) => v === 0)
    ).toBe(true)
  })

  it("expect the best of more memories to stand out more by chance", () => {
    expect(chanceMaximumZ(1)).toBe(0)
    expect(chanceMaximumZ(30)).toBeGreaterThan(1.5)
    expect(chanceMaximumZ(1000)).toBeGreaterThan(chanceMaximumZ(30))
    expect(chanceMaximumZ(1000)).toBeLessThan(3.5)
  })

  it("give equal keyword scores the same rank", () => {
    const index = indexOf([memory("Drinks oolong tea", 0), memory("Drinks black tea", 1), memory("Plays chess", 2)])
    const prepared = prepareQuery(
      index,
      { terms: queryTermsOf("tea"), cosines: undefined, window: undefined },
      now,
      settings
    )
    expect(featureOf(prepared, 0, "keywordRank")).toBe(1)
    expect(featureOf(prepared, 1, "keywordRank")).toBe(1)
    expect(featureOf(prepared, 2, "keywordRank")).toBe(0)
  })

  it("see a memory that answers a matching question remembered just before it", () => {
    const asked = now - DAY
    const index = indexOf([
      memory("Caroline: What instrument do you play?", 0, asked),
      memory("Melanie: The clarinet, since I was young.", 1, asked + MINUTE),
      memory("Melanie: Went to the beach.", 2, asked + 30 * MINUTE)
    ])
    expect(Array.from(index.asks)).toEqual([1, 0, 0])
    expect(Array.from(index.previous)).toEqual([-1, 0, -1])
    const prepared = prepareQuery(
      index,
      { terms: queryTermsOf("What instrument does Melanie play?"), cosines: undefined, window: undefined },
      now,
      settings
    )
    expect(featureOf(prepared, 1, "answersKeyword")).toBeGreaterThan(0)
    expect(featureOf(prepared, 2, "answersKeyword")).toBe(0)
  })

  it("count a profile smaller than the smallest one fitted as that size", () => {
    const small = prepareQuery(
      indexOf([memory("a note", 0)]),
      { terms: new Map(), cosines: undefined, window: undefined },
      now,
      settings
    )
    const thirty = prepareQuery(
      indexOf(Array.from({ length: 30 }, (_, i) => memory(`note ${i}`, i))),
      { terms: new Map(), cosines: undefined, window: undefined },
      now,
      settings
    )
    expect(featureOf(small, 0, "profileSize")).toBe(featureOf(thirty, 0, "profileSize"))
  })

  it("count a profile larger than the largest one fitted as that size", () => {
    const sized = (n: number) =>
      prepareQuery(
        indexOf(Array.from({ length: n }, (_, i) => memory(`note ${i}`, i))),
        { terms: new Map(), cosines: undefined, window: undefined },
        now,
        settings
      )
    expect(featureOf(sized(3000), 0, "profileSize")).toBe(featureOf(sized(700), 0, "profileSize"))
    expect(featureOf(sized(700), 0, "profileSize")).toBeGreaterThan(featureOf(sized(300), 0, "profileSize"))
  })
})

describe("a conversation-aware query", () => {
  it("is the latest user message, with the previous one and the answer between them weighing less", () => {
    const query = conversationQueryOf([
      { role: "system", content: "Be brief." },
      { role: "user", content: "How is my mother Carys doing?" },
      { role: "assistant", content: "Carys moved to Cardiff last spring." },
      { role: "user", content: "And what about her sister?" }
    ])
    expect(query.latest).toBe("And what about her sister?")
    expect(query.earlier).toEqual([
      { text: "How is my mother Carys doing?", weight: PREVIOUS_USER_WEIGHT },
      { text: "Carys moved to Cardiff last spring.", weight: ASSISTANT_WEIGHT }
    ])
    const terms = weightedTermsOf([{ text: query.latest, weight: 1 }, ...query.earlier])
    const stem = (word: string) => [...queryTermsOf(word).keys()][0]!
    expect(terms.get(stem("sister"))).toBe(1)
    // A term of both earlier messages takes the larger weight.
    expect(terms.get(stem("Carys"))).toBe(PREVIOUS_USER_WEIGHT)
    expect(terms.get(stem("Cardiff"))).toBe(ASSISTANT_WEIGHT)
  })

  it("is the message alone when it opens the conversation", () => {
    expect(conversationQueryOf([{ role: "user", content: "Hello" }])).toEqual({ latest: "Hello", earlier: [] })
    expect(conversationQueryOf([])).toEqual({ latest: "", earlier: [] })
  })
})
