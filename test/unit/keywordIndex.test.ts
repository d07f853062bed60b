import { describe, expect, it } from "vitest"
import { buildKeywordIndex, keywordCandidates, keywordQuery, keywordScore } from "../../src/retrieval/keywordIndex.ts"
import { queryTermsOf, termsOf } from "../../src/retrieval/terms.ts"

const indexOf = (texts: ReadonlyArray<string>) => buildKeywordIndex(texts.map(termsOf))
const scores = (texts: ReadonlyArray<string>, query: string) => {
  const prepared = keywordQuery(indexOf(texts), queryTermsOf(query))
  return texts.map((_, i) => keywordScore(prepared, i))
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
    const result = scores(
      ["Has a dog named Rex", "Lives in Lisbon", "Walks the dog every morning"],
      "What breed is my dog?"
    )
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

describe("keyword candidates", () => {
  it("leave out only memories that cannot reach the minimum, and skip words found everywhere", () => {
    let seed = 11
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
    const vocabulary = Array.from({ length: 40 }, (_, i) => `word${String.fromCharCode(97 + (i % 26))}${i}`)
    // Zipf-like: the first words are in most memories, the last in few.
    const texts = Array.from({ length: 500 }, () =>
      Array.from({ length: 8 }, () => vocabulary[Math.floor(vocabulary.length * random() ** 3)]!).join(" ")
    )
    const index = indexOf(texts)
    for (let trial = 0; trial < 50; trial++) {
      const query = keywordQuery(
        index,
        queryTermsOf(
          Array.from({ length: 1 + Math.floor(random() * 5) }, () => vocabulary[Math.floor(random() * 40)]).join(" ")
        )
      )
      for (const minimum of [0.1, 0.3, 0.6]) {
        const candidates = keywordCandidates(query, minimum)
        texts.forEach((_, row) => {
          if (keywordScore(query, row) >= minimum) expect(candidates.has(row)).toBe(true)
        })
      }
    }
    // A word found in nearly every memory, asked with a rare one: only the rare word's memories are visited.
    const [common, rare] = [vocabulary[0]!, vocabulary[39]!]
    const containing = (word: string) => texts.filter((text) => text.split(" ").includes(word)).length
    expect(containing(common)).toBeGreaterThan(200)
    const visited = keywordCandidates(keywordQuery(index, queryTermsOf(`${common} ${rare}`)), 0.3)
    expect(visited.size).toBe(containing(rare))
  })
})
