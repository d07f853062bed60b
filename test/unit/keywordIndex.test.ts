import { describe, expect, it } from "vitest"
import { buildKeywordIndex, keywordScores } from "../../src/retrieval/keywordIndex.ts"
import { queryTermsOf, termsOf } from "../../src/retrieval/terms.ts"

const indexOf = (texts: ReadonlyArray<string>) => buildKeywordIndex(texts.map(termsOf))
const scores = (texts: ReadonlyArray<string>, query: string) => {
  const found = keywordScores(indexOf(texts), queryTermsOf(query))
  return texts.map((_, i) => found.get(i) ?? 0)
}

describe("terms", () => {
  it("stems words and drops stop words, counting repeats", () => {
    const terms = termsOf("The user was cooking; she cooks and cooked for her cooking class")
    expect(terms.counts.get("cook")).toBe(4)
    expect(terms.counts.has("the")).toBe(false)
    expect(terms.length).toBe(6)
  })
})

describe("keyword relevance (BM25)", () => {
  it("scores memories sharing no term with the query 0 and the rest in (0, 1]", () => {
    const result = scores(["Has a dog named Rex", "Lives in Lisbon", "Walks the dog every morning"], "What breed is my dog?")
    expect(result[1]).toBe(0)
    for (const score of [result[0]!, result[2]!]) {
      expect(score).toBeGreaterThan(0)
      expect(score).toBeLessThanOrEqual(1)
    }
  })

  it("weighs a rare term more than a common one", () => {
    const texts = [
      "User likes coffee in the morning",
      "User likes tea",
      "User likes jazz",
      "User likes hiking",
      "User drinks espresso"
    ]
    const result = scores(texts, "likes espresso")
    // "espresso" occurs once, "likes" four times: matching the rare word counts for more.
    expect(result[4]).toBeGreaterThan(result[0]!)
  })

  it("keeps a memory that matches one common word of a long question low", () => {
    const texts = ["Spends a lot of time in the garden", "Grows tomatoes", "Keeps bees"]
    const [garden] = scores(texts, "What is 17 times 23?")
    expect(garden).toBeGreaterThan(0)
    expect(garden).toBeLessThan(0.4)
  })

  it("gives a memory that contains every query term about full relevance", () => {
    const [best] = scores(["Sister is called Ines", "Brother is called Tomas", "Sister lives in Porto"], "sister Ines")
    expect(best).toBeGreaterThan(0.9)
  })
})
