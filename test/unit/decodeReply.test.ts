import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import fc from "fast-check"
import { MAX_SUMMARY_LENGTH } from "../../src/domain/Profile.ts"
import {
  decodeCueReply,
  decodeExtraction,
  decodeSummary,
  MAX_EXTRACTED_MEMORY_LENGTH,
  MAX_ITEMS
} from "../../src/extraction/decodeReply.ts"

const reply = (json: unknown) => JSON.stringify(json)
const memory = (content: unknown, extra: Record<string, unknown> = {}) => ({
  content,
  type: "fact",
  importance: 0.5,
  ...extra
})

describe("an extraction reply", () => {
  it("gives its traits and memories, whatever else the model added", () => {
    const decoded = decodeExtraction(
      reply({
        traits: [
          { key: "name", value: "Ana", confidence: 0.9 },
          { key: "languages", value: ["pt", "en"], confidence: 0.6 }
        ],
        memories: [
          memory("  Is learning Rust  ", { cues: ["robotics"], occurred_at: "2026-03-14", supersedes: ["m2"] })
        ],
        reasoning: "the user said so"
      })
    )
    expect(decoded).toEqual({
      traits: [
        { key: "name", value: "Ana", confidence: 0.9 },
        { key: "languages", value: ["pt", "en"], confidence: 0.6 }
      ],
      memories: [
        {
          content: "Is learning Rust",
          type: "fact",
          importance: 0.5,
          cues: ["robotics"],
          occurred_at: "2026-03-14",
          supersedes: ["m2"]
        }
      ],
      dropped: []
    })
  })

  it("with nothing to say is empty, not an error", () => {
    expect(decodeExtraction(reply({}))).toEqual({ traits: [], memories: [], dropped: [] })
    expect(decodeExtraction(reply({ traits: [], memories: [] }))).toEqual({ traits: [], memories: [], dropped: [] })
  })

  it("that is not a JSON object gives nothing, and says why", () => {
    for (const text of ["Sorry, I cannot help with that.", "", "[1, 2]", '"traits"', "null", '{"traits": [']) {
      expect(decodeExtraction(text)).toEqual({ traits: [], memories: [], dropped: ["the reply is not a JSON object"] })
    }
  })

  it("loses only its bad items, each named with where and why", () => {
    const decoded = decodeExtraction(
      reply({
        traits: [
          { key: "name", value: "Bo", confidence: 1.5 },
          { key: "", value: "x", confidence: 0.5 },
          { key: "timezone", value: "Europe/Oslo", confidence: 0.7 }
        ],
        memories: [
          memory("Plays the cello", { importance: 2 }),
          memory(42),
          memory("   "),
          memory("Has two cats"),
          memory("Lies", { type: "rumour" })
        ]
      })
    )
    expect(decoded.traits).toEqual([{ key: "timezone", value: "Europe/Oslo", confidence: 0.7 }])
    expect(decoded.memories.map((m) => m.content)).toEqual(["Has two cats"])
    expect(decoded.dropped).toHaveLength(6)
    expect(decoded.dropped[0]).toMatch(/^traits\[0\]\.confidence: /)
    expect(decoded.dropped[1]).toMatch(/^traits\[1\]\.key: /)
    expect(decoded.dropped.slice(2).map((note) => note.split(":")[0])).toEqual([
      "memories[0].importance",
      "memories[1].content",
      "memories[2].content",
      "memories[4].type"
    ])
  })

  it("refuses a list that is not a list, and keeps the other", () => {
    const decoded = decodeExtraction(reply({ traits: { name: "Ana" }, memories: [memory("Likes tea")] }))
    expect(decoded).toEqual({ traits: [], memories: [memory("Likes tea")], dropped: ["traits: not an array"] })
  })

  it("takes at most 25 items of each kind", () => {
    const many = Array.from({ length: 40 }, (_, i) => memory(`Fact ${i}`))
    const decoded = decodeExtraction(reply({ memories: many }))
    expect(decoded.memories).toHaveLength(MAX_ITEMS)
    expect(decoded.memories.at(-1)!.content).toBe(`Fact ${MAX_ITEMS - 1}`)
    expect(decoded.dropped).toEqual([`memories: more than ${MAX_ITEMS} items`])
  })

  it("keeps no memory longer than the limit, nor text PostgreSQL cannot store", () => {
    const decoded = decodeExtraction(
      reply({
        memories: [
          memory("x".repeat(MAX_EXTRACTED_MEMORY_LENGTH + 1)),
          memory("nul \u0000 inside"),
          memory("x".repeat(MAX_EXTRACTED_MEMORY_LENGTH))
        ]
      })
    )
    expect(decoded.memories.map((m) => m.content.length)).toEqual([MAX_EXTRACTED_MEMORY_LENGTH])
    expect(decoded.dropped).toHaveLength(2)
  })

  it("never throws, and whatever it keeps is within the limits", () => {
    const anyItem = fc.oneof(
      fc.anything(),
      fc.record({ key: fc.string(), value: fc.jsonValue(), confidence: fc.double() }),
      fc.record({
        content: fc.string({ maxLength: 1100 }),
        type: fc.constantFrom("fact", "preference", "event", "context", "other"),
        importance: fc.double()
      })
    )
    const anyReply = fc.oneof(
      fc.string(),
      fc
        .record(
          {
            traits: fc.oneof(fc.array(anyItem, { maxLength: 30 }), anyItem),
            memories: fc.oneof(fc.array(anyItem, { maxLength: 30 }), anyItem)
          },
          { requiredKeys: [] }
        )
        .map((json) => JSON.stringify(json))
    )
    fc.assert(
      fc.property(anyReply, (text) => {
        const { traits, memories } = decodeExtraction(text)
        expect(traits.length).toBeLessThanOrEqual(MAX_ITEMS)
        expect(memories.length).toBeLessThanOrEqual(MAX_ITEMS)
        for (const trait of traits) expect(trait.confidence >= 0 && trait.confidence <= 1).toBe(true)
        for (const m of memories) {
          expect(m.content).toBe(m.content.trim())
          expect(m.content.length >= 1 && m.content.length <= MAX_EXTRACTED_MEMORY_LENGTH).toBe(true)
          expect(m.importance >= 0 && m.importance <= 1).toBe(true)
        }
      }),
      { numRuns: 500 }
    )
  })
})

describe("a summary reply", () => {
  it("gives its summary, trimmed", () => {
    expect(decodeSummary(reply({ summary: "  Ana is learning Rust.  " }))).toEqual(Option.some("Ana is learning Rust."))
  })

  it("without a usable summary gives none (the profile keeps its old one)", () => {
    for (const text of [
      "not json",
      reply({}),
      reply({ summary: "   " }),
      reply({ summary: 42 }),
      reply([{ summary: "x" }])
    ]) {
      expect(decodeSummary(text)).toEqual(Option.none())
    }
  })

  it("is cut to the longest summary a profile holds, and made storable", () => {
    const long = decodeSummary(reply({ summary: "y".repeat(MAX_SUMMARY_LENGTH + 50) }))
    expect(Option.getOrThrow(long)).toHaveLength(MAX_SUMMARY_LENGTH)
    expect(decodeSummary(reply({ summary: "a\u0000b" }))).toEqual(Option.some("a\ufffdb"))
  })
})

describe("a cue reply", () => {
  const refs = new Set(["m1", "m2", "m3"])

  it("gives trimmed cues by ref, for the refs asked about only", () => {
    const decoded = decodeCueReply(
      reply({
        cues: [
          { ref: "m1", cues: ["  ice cream ", "cheese"] },
          { ref: "m9", cues: ["x"] },
          { ref: "m2", cues: [] }
        ]
      }),
      refs
    )
    expect([...decoded.cues]).toEqual([
      ["m1", ["ice cream", "cheese"]],
      ["m2", []]
    ])
    expect(decoded.dropped).toEqual(['cues: no memory has the ref "m9"'])
  })

  it("drops a bad item and keeps the others", () => {
    const decoded = decodeCueReply(
      reply({
        cues: [
          { ref: "m1", cues: ["x".repeat(81)] },
          { ref: "m2", cues: "dairy" },
          { ref: "m3", cues: ["dairy"] }
        ]
      }),
      refs
    )
    expect([...decoded.cues]).toEqual([["m3", ["dairy"]]])
    expect(decoded.dropped).toHaveLength(2)
  })

  it("without a JSON object gives no cues and says why", () => {
    for (const text of ["not json", reply([{ ref: "m1", cues: ["x"] }])]) {
      expect(decodeCueReply(text, refs)).toEqual({ cues: new Map(), dropped: ["the reply is not a JSON object"] })
    }
    expect(decodeCueReply(reply({ cues: "none" }), refs).dropped).toEqual(["cues: not an array"])
  })
})

describe("a memory's source and category", () => {
  const context = {
    categories: new Set(["food", "work"]),
    attachments: new Map([
      ["a1", "image" as const],
      ["a2", "file" as const]
    ])
  }

  it("name an attachment by its ref (its kind is the source) and one of the job's categories", () => {
    const decoded = decodeExtraction(
      reply({
        memories: [
          memory("Has a dog", { source: "a1", category: "food" }),
          memory("Read a report", { source: ["a2", "a1"], category: " work " }),
          memory("Likes tea", { source: "image" }),
          memory("Said hello", { source: "text" })
        ]
      }),
      context
    )
    expect(decoded.memories.map(({ content, source, category }) => ({ content, source, category }))).toEqual([
      { content: "Has a dog", source: "image", category: "food" },
      { content: "Read a report", source: "file", category: "work" },
      { content: "Likes tea", source: "image", category: undefined },
      { content: "Said hello", source: undefined, category: undefined }
    ])
    expect(decoded.dropped).toEqual([])
  })

  it("that are unknown leave the memory from the text, without a category: never the item dropped", () => {
    const decoded = decodeExtraction(
      reply({
        memories: [
          memory("One", { source: "a9", category: "travel" }),
          memory("Two", { source: 42, category: 7 }),
          memory("Three", { source: { ref: "a1" }, category: null })
        ]
      }),
      context
    )
    expect(decoded.memories).toHaveLength(3)
    for (const item of decoded.memories) {
      expect(item.source).toBeUndefined()
      expect(item.category).toBeUndefined()
    }
    expect(decoded.dropped).toEqual([
      'memories[0].category: "travel" is not one of the categories (kept without one)',
      'memories[1].category: "7" is not one of the categories (kept without one)'
    ])
  })

  it("without attachments or categories in the job, an image source and any category are not taken", () => {
    const decoded = decodeExtraction(
      reply({ memories: [memory("Saw a photo", { source: "image", category: "food" })] })
    )
    expect(decoded.memories[0]).not.toHaveProperty("source")
    expect(decoded.memories[0]).not.toHaveProperty("category")
    expect(decoded.dropped).toEqual(['memories[0].category: "food" is not one of the categories (kept without one)'])
  })
})
