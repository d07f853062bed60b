import { describe, expect, it } from "vitest"
import { FEATURE_COUNT, type FeatureName, featureIndex } from "../../src/retrieval/featureSet.ts"
import { buildMemoryIndex, type CandidateMemory } from "../../src/retrieval/MemoryIndex.ts"
import { featuresOf, prepareQuery } from "../../src/retrieval/rankingFeatures.ts"
import { queryTermsOf, termsOf } from "../../src/retrieval/terms.ts"
import { asksTime, statesTime } from "../../src/retrieval/timeMentions.ts"
import { timeWindowOf } from "../../src/retrieval/timeWindow.ts"

const DAY = 86_400_000
const MINUTE = 60_000
const now = Date.UTC(2026, 10, 23, 15)
const settings = { halfLives: { fact: 365, preference: 180, event: 30, context: 60 }, recencyHalfLifeDays: 30 }

const memory = (content: string, i: number, createdAt: number, occurredAt: number | null = null): CandidateMemory => ({
  id: `m${i}`,
  content,
  type: "event",
  importance: 0.5,
  decayBase: 1,
  createdAt,
  lastAccessedAt: null,
  reinforcedAt: null,
  occurredAt,
  cues: []
})

const indexOf = (memories: ReadonlyArray<CandidateMemory>) =>
  buildMemoryIndex(
    memories.map((m) => ({ memory: m, terms: termsOf(m.content), vector: undefined })),
    undefined
  )

const features = (index: ReturnType<typeof indexOf>, question: string) => {
  const prepared = prepareQuery(
    index,
    {
      terms: queryTermsOf(question),
      cosines: undefined,
      window: timeWindowOf(question, now),
      asksTime: asksTime(question)
    },
    now,
    settings
  )
  return (row: number, name: FeatureName) => {
    const out = new Float64Array(FEATURE_COUNT)
    featuresOf(prepared, row, out)
    return out[featureIndex[name]]!
  }
}

/** Twenty memories of a day of chat, a minute apart, none naming anyone. */
const chatter = (from: number) =>
  Array.from({ length: 20 }, (_, i) =>
    memory(`Talked about the weather and lunch, part ${i}.`, 100 + i, from + i * MINUTE)
  )

describe("names in memories", () => {
  it("are the words written with a capital where no sentence starts, and a memory's first word when it is one", () => {
    const terms = termsOf("Caroline: Hey Melanie! I went to the Eiffel Tower. Wow, it was tall.")
    expect([...terms.named].sort()).toEqual(["eiffel", "melani", "tower"])
    expect(terms.first).toBe("carolin")
    // Greetings and the calendar are not names.
    expect(termsOf("Went out with Anna on Monday, in March. Thanks Anna!").named).toEqual(["anna"])
  })

  it("are the profile's wherever a memory writes them, and a memory starting with one is about it", () => {
    const index = indexOf([
      memory("Melanie: my daughter Sarah loves painting", 0, now - 3 * DAY),
      memory("sarah drew a horse for her school show", 1, now - 2 * DAY),
      memory("Went to the park with Melanie", 2, now - DAY)
    ])
    expect([...index.names].sort()).toEqual(["melani", "sarah"])
    expect(index.subjects).toEqual(["melani", undefined, undefined])
  })
})

describe("multi-hop links", () => {
  it("reach the memory that names what the question's best match names, and say how", () => {
    const index = indexOf([
      memory("Melanie: my daughter Sarah loves painting", 0, now - 30 * DAY),
      memory("Sarah drew a horse at school", 1, now - 20 * DAY),
      memory("Bought a horse saddle", 2, now - 10 * DAY),
      memory("Had coffee with Melanie", 3, now - 8 * DAY),
      ...chatter(now - 5 * DAY)
    ])
    const feature = features(index, "What did Melanie's daughter draw?")
    // Reached through "Sarah", whom the question never names.
    expect(feature(1, "hop")).toBeGreaterThan(0)
    expect(feature(2, "hop")).toBe(0)
    // The match itself: it names Melanie (the question's only name), and is about her.
    expect(feature(0, "names")).toBe(1)
    expect(feature(0, "subject")).toBeGreaterThan(0)
    expect(feature(1, "subject")).toBe(0)
  })
})

describe("neighbours in time", () => {
  it("are the memories just before and after within minutes, never ones written at the same moment", () => {
    const at = now - DAY
    const index = indexOf([
      memory("Anna: What did you cook?", 0, at),
      memory("Ben: A risotto with mushrooms.", 1, at + MINUTE),
      memory("Ben: It took an hour.", 2, at + 2 * MINUTE),
      memory("Ben: Then we watched a film.", 3, at + 3 * MINUTE),
      // Two facts of one extraction: siblings, not a sequence.
      memory("Likes jazz", 4, at + 60 * MINUTE),
      memory("Owns a bike", 5, at + 60 * MINUTE)
    ])
    expect(Array.from(index.previous)).toEqual([-1, 0, 1, 2, -1, -1])
    expect(Array.from(index.next)).toEqual([1, 2, 3, -1, -1, -1])
    const feature = features(index, "what did Anna cook")
    expect(feature(1, "previousKeyword")).toBeGreaterThan(0)
    // Two steps from the match.
    expect(feature(2, "nearKeyword")).toBeGreaterThan(0)
    expect(feature(3, "nearKeyword")).toBeGreaterThan(0)
    expect(feature(5, "nearKeyword")).toBe(0)
  })
})

describe("time in memories", () => {
  it("is read from when the memory was said, so a question naming the day finds it", () => {
    const said = Date.UTC(2026, 2, 17, 14)
    const index = indexOf([
      memory("James: yesterday I went bowling and got 2 strikes", 0, said, said),
      memory("James: I love bowling", 1, said + MINUTE, said),
      ...chatter(now - 5 * DAY)
    ])
    const feature = features(index, "What did James do on March 16, 2026?")
    expect(feature(0, "time")).toBe(1)
    expect(feature(1, "time")).toBe(0)
  })

  it("answers a question that asks when with the memories that name a time", () => {
    expect(asksTime("When did Caroline go to the support group?")).toBe(true)
    expect(asksTime("How long has she played the violin?")).toBe(true)
    expect(asksTime("What does Caroline paint?")).toBe(false)
    expect(statesTime("I went to the support group last Friday")).toBe(true)
    expect(statesTime("I've played for 3 years now")).toBe(true)
    expect(statesTime("We're going hiking next month")).toBe(true)
    expect(statesTime("I love the support group")).toBe(false)
    const index = indexOf([
      memory("Caroline: I went to the support group last Friday", 0, now - DAY),
      memory("Caroline: I love the support group", 1, now - 3 * DAY),
      ...chatter(now - 5 * DAY)
    ])
    const feature = features(index, "When did Caroline go to the support group?")
    expect(feature(0, "timeAnswer")).toBe(1)
    expect(feature(1, "timeAnswer")).toBe(0)
    expect(features(index, "Where is the support group?")(0, "timeAnswer")).toBe(0)
  })
})
