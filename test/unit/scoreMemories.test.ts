import { Schema } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { MemoryType } from "../../src/domain/Memory.ts"
import { cosineRows, normalize, quantize } from "../../src/embedding/vectors.ts"
import { orderChangedFacts } from "../../src/retrieval/changedFacts.ts"
import {
  FEATURES,
  featureIndex,
  NON_NEGATIVE_FEATURES,
  RELEVANCE_FEATURES,
  SEMANTIC_FEATURES
} from "../../src/retrieval/featureSet.ts"
import { buildMemoryIndex, type CandidateMemory } from "../../src/retrieval/MemoryIndex.ts"
import shippedModel from "../../src/retrieval/rankingModel.json" with { type: "json" }
import { logitFor, probabilityOf, RankingModelFile, rankingModelOf } from "../../src/retrieval/rankingModel.ts"
import { type RankingQuery, type RankingSettings, scoreMemories } from "../../src/retrieval/scoreMemories.ts"
import { queryTermsOf, termsOf } from "../../src/retrieval/terms.ts"
import { timeWindowOf } from "../../src/retrieval/timeWindow.ts"

const DAY = 86_400_000
const now = Date.UTC(2026, 10, 23, 15)

interface Spec {
  readonly content: string
  readonly type?: MemoryType
  readonly importance?: number
  readonly ageDays?: number
  readonly occurredAt?: number
  /** A unit vector as a direction index (memories with equal directions are identical in meaning). */
  readonly vector?: ReadonlyArray<number>
}

const memory = (spec: Spec, i: number): CandidateMemory => ({
  id: `m${i}`,
  content: spec.content,
  type: spec.type ?? "fact",
  importance: spec.importance ?? 0.5,
  decayBase: 1,
  createdAt: now - (spec.ageDays ?? 10) * DAY,
  lastAccessedAt: null,
  reinforcedAt: null,
  occurredAt: spec.occurredAt ?? null,
  cues: []
})

const indexOf = (specs: ReadonlyArray<Spec>) =>
  buildMemoryIndex(
    specs.map((spec, i) => ({
      memory: memory(spec, i),
      terms: termsOf(spec.content),
      vector: spec.vector === undefined ? undefined : quantize(spec.vector)
    })),
    "test-model"
  )

const settings: RankingSettings = {
  model: rankingModelOf(Schema.decodeUnknownSync(RankingModelFile)(shippedModel)),
  features: { halfLives: { fact: 365, preference: 180, event: 30, context: 60 }, recencyHalfLifeDays: 30 }
}

const queryOf = (index: ReturnType<typeof indexOf>, text: string, vector?: ReadonlyArray<number>): RankingQuery => {
  let cosines: Float32Array | undefined
  if (vector !== undefined && index.vectors !== undefined) {
    cosines = new Float32Array(index.memories.length)
    cosineRows(index.vectors, normalize(vector), 0, index.memories.length, cosines)
  }
  return { terms: queryTermsOf(text), cosines, window: timeWindowOf(text, now) }
}

const rank = (specs: ReadonlyArray<Spec>, text: string, vector?: ReadonlyArray<number>, relevantOnly = true) => {
  const index = indexOf(specs)
  return scoreMemories(index, queryOf(index, text, vector), settings, now, { limit: 10, relevantOnly })
}

describe("the fitted memory ranking", () => {
  it("finds a memory by meaning when it shares no word with the question", () => {
    const ranked = rank(
      [
        { content: "Is vegetarian and avoids all meat", vector: [1, 0.1, 0] },
        { content: "Owns a vintage motorbike", vector: [0, 1, 0] },
        { content: "Plays the cello", vector: [0, 0, 1] }
      ],
      "What should I cook tonight?",
      [1, 0, 0]
    )
    expect(ranked.map((s) => s.memory.content)).toEqual(["Is vegetarian and avoids all meat"])
    expect(ranked[0]!.parts.keyword).toBe(0)
    expect(ranked[0]!.parts.semantic).toBeCloseTo(0.995, 2)
  })

  it("injects nothing when no memory is relevant to the question", () => {
    const specs = [
      { content: "Is vegetarian", vector: [1, 0, 0], importance: 1 },
      { content: "Owns a motorbike", vector: [0, 1, 0], importance: 1 }
    ]
    expect(rank(specs, "What is 17 times 23?", [0, 0, 1])).toEqual([])
    // Search still lists them, below the floor.
    const listed = rank(specs, "What is 17 times 23?", [0, 0, 1], false)
    expect(listed).toHaveLength(2)
    expect(listed.every((s) => !s.relevant)).toBe(true)
  })

  it("ranks by keywords alone when there is no query vector, and for memories without a vector", () => {
    const specs = [
      { content: "Sister is called Ines", vector: [0, 1, 0] },
      { content: "Brother is called Tomas" },
      { content: "Sister lives in Porto and works as a nurse" }
    ]
    const keywordOnly = rank(specs, "What is my sister's name, Ines?")
    expect(keywordOnly[0]!.memory.content).toBe("Sister is called Ines")
    expect(keywordOnly.every((s) => s.parts.semantic === null)).toBe(true)
    const mixed = rank(specs, "sister", [0, 1, 0])
    expect(mixed.find((s) => s.memory.content.startsWith("Sister lives"))!.parts.semantic).toBeNull()
  })

  it("boosts memories of the period the question names, more for a day than for a year", () => {
    const specs = [
      { content: "Went bouldering with Sam", type: "event" as const, occurredAt: now - DAY },
      { content: "Went to a jazz concert", type: "event" as const, occurredAt: now - 20 * DAY },
      { content: "Likes bouldering", type: "preference" as const }
    ]
    const yesterday = rank(specs, "What did I do yesterday?")
    expect(yesterday.map((s) => s.memory.content)).toEqual(["Went bouldering with Sam"])
    expect(yesterday[0]!.parts.time).toBe(1)
    const year = rank(specs, "What did I do this year?", undefined, false)
    expect(year[0]!.parts.time).toBeLessThan(1)
    expect(year.filter((s) => s.relevant)).toEqual([])
  })

  it("prefers the more important, then the more recent memory when the probability is equal", () => {
    const byImportance = rank(
      [
        { content: "Drinks oolong tea", importance: 0.2, ageDays: 30 },
        { content: "Drinks green tea", importance: 0.9, ageDays: 30 }
      ],
      "tea"
    )
    expect(byImportance.map((s) => s.memory.content)).toEqual(["Drinks green tea", "Drinks oolong tea"])
    const byRecency = rank(
      [
        { content: "Drinks oolong tea", ageDays: 300 },
        { content: "Drinks black tea", ageDays: 2 }
      ],
      "tea"
    )
    expect(byRecency.map((s) => s.memory.content)).toEqual(["Drinks black tea", "Drinks oolong tea"])
  })

  it("filters by type and keeps to the limit", () => {
    const specs = Array.from({ length: 30 }, (_, i) => ({
      content: `Tea note ${i}`,
      type: (i % 2 === 0 ? "fact" : "event") as MemoryType
    }))
    const index = indexOf(specs)
    const ranked = scoreMemories(index, queryOf(index, "tea"), settings, now, {
      limit: 5,
      type: "event",
      relevantOnly: true
    })
    expect(ranked).toHaveLength(5)
    expect(ranked.every((s) => s.memory.type === "event")).toBe(true)
  })
})

/** Filler memories with their own random directions in 64 dimensions: a realistic spread of cosines. */
const DIMENSIONS = 64
const seeded = (seed: number) => () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1
const randomDirection = (random: () => number) => Array.from({ length: DIMENSIONS }, random)
const fillerOf = (count: number, random: () => number): Array<Spec> =>
  Array.from({ length: count }, (_, i) => ({
    content: `Owns item number ${i} of a collection`,
    vector: randomDirection(random)
  }))

describe("what a query vector can do", () => {
  it("injects a memory that stands out by meaning though it shares no word with the message", () => {
    const random = seeded(11)
    const answer = randomDirection(random)
    // Enough memories that injection scores only those some signal reaches.
    const specs = [...fillerOf(200, random), { content: "Is vegetarian and avoids all meat", vector: answer }]
    // The message's vector is close to the answer's, not to anything else.
    const query = answer.map((x) => x + random() * 0.3)
    const ranked = rank(specs, "What should I cook tonight?", query)
    expect(ranked[0]?.memory.content).toBe("Is vegetarian and avoids all meat")
    expect(ranked[0]!.parts.keyword).toBe(0)
    expect(ranked[0]!.relevant).toBe(true)
  })

  it("never demotes a keyword hit below the floor, however little its vector says", () => {
    const random = seeded(5)
    const specs = [...fillerOf(60, random), { content: "Sister Ines lives in Porto", vector: randomDirection(random) }]
    const text = "Where does my sister Ines live?"
    const withoutVector = rank(specs, text)
    expect(withoutVector[0]?.memory.content).toBe("Sister Ines lives in Porto")
    // A query vector pointing away from the hit: its cosine is the lowest of all.
    const index = indexOf(specs)
    const away = specs.at(-1)!.vector!.map((x) => -x)
    const withVector = scoreMemories(index, queryOf(index, text, away), settings, now, {
      limit: 10,
      relevantOnly: true
    })
    const hit = withVector.find((scored) => scored.memory.content.startsWith("Sister"))
    expect(hit?.relevant).toBe(true)
    expect(hit!.parts.relevance).toBeGreaterThanOrEqual(withoutVector[0]!.score)
  })

  it("can only raise a memory's probability: the semantic weights are never negative, and ignored without a vector", () => {
    const model = settings.model
    FEATURES.forEach((name, j) => {
      if (NON_NEGATIVE_FEATURES.has(name)) {
        expect(model.withVectors.weights[j]).toBeGreaterThanOrEqual(0)
        expect(model.keywordsOnly.weights[j]).toBeGreaterThanOrEqual(0)
      }
      if (SEMANTIC_FEATURES.has(name)) expect(model.keywordsOnly.weights[j]).toBe(0)
    })
    // So the probability is monotone in every relevance feature.
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), {
          minLength: FEATURES.length,
          maxLength: FEATURES.length
        }),
        fc.constantFrom(...FEATURES.filter((name) => RELEVANCE_FEATURES.has(name))),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (values, name, more) => {
          const before = Float64Array.from(values)
          const after = Float64Array.from(values)
          after[featureIndex[name]]! += more
          for (const scorer of [model.withVectors, model.keywordsOnly]) {
            expect(probabilityOf(logitFor(scorer, after))).toBeGreaterThanOrEqual(
              probabilityOf(logitFor(scorer, before))
            )
          }
        }
      )
    )
  })
})

describe("changed facts that were not marked", () => {
  it("put the newer of two memories about one subject first, and date both", () => {
    const random = seeded(3)
    const car = randomDirection(random)
    const specs = [
      ...fillerOf(40, random),
      { content: "Drives a 2015 Skoda Octavia estate", ageDays: 600, vector: car },
      { content: "Sold the Skoda and now drives a Kia Niro", ageDays: 30, vector: car.map((x) => x + random() * 0.4) }
    ]
    const index = indexOf(specs)
    const ranked = orderChangedFacts(
      scoreMemories(index, queryOf(index, "Which Skoda estate do I drive?", car), settings, now, {
        limit: 10,
        relevantOnly: true
      }),
      index
    )
    const contents = ranked.map((scored) => scored.memory.content)
    expect(contents.indexOf("Sold the Skoda and now drives a Kia Niro")).toBeLessThan(
      contents.indexOf("Drives a 2015 Skoda Octavia estate")
    )
    expect(
      ranked
        .filter((scored) => scored.changedFact)
        .map((scored) => scored.memory.content)
        .sort()
    ).toEqual(["Drives a 2015 Skoda Octavia estate", "Sold the Skoda and now drives a Kia Niro"])
  })

  it("leave two events alone: a later one changes nothing that happened before", () => {
    const random = seeded(3)
    const car = randomDirection(random)
    const specs = [
      ...fillerOf(40, random),
      { content: "Test drove a 2015 Skoda Octavia estate", ageDays: 600, vector: car, type: "event" as const },
      {
        content: "Now test drove the new Skoda Kodiaq",
        ageDays: 30,
        vector: car.map((x) => x + random() * 0.4),
        type: "event" as const
      }
    ]
    const index = indexOf(specs)
    const scored = scoreMemories(index, queryOf(index, "Which Skoda estate did I test drive?", car), settings, now, {
      limit: 10,
      relevantOnly: true
    })
    expect(scored.filter((s) => s.memory.content.includes("Skoda"))).toHaveLength(2)
    expect(orderChangedFacts(scored, index)).toBe(scored)
  })

  it("leave memories about different subjects alone", () => {
    const random = seeded(9)
    const specs = [
      ...fillerOf(40, random),
      { content: "Drives a Skoda Octavia", ageDays: 600, vector: randomDirection(random) },
      { content: "Plays the cello on Skoda street", ageDays: 30, vector: randomDirection(random) }
    ]
    const index = indexOf(specs)
    const scored = scoreMemories(index, queryOf(index, "skoda", randomDirection(random)), settings, now, {
      limit: 10,
      relevantOnly: true
    })
    expect(orderChangedFacts(scored, index)).toBe(scored)
  })
})

describe("injection and search", () => {
  it("agree: injection takes the relevant memories of the full ranking, in its order, up to the limit", () => {
    const words = ["tea", "coffee", "sister", "Porto", "cello", "marathon", "yesterday", "garden"]
    const spec = fc.record({
      content: fc
        .array(fc.constantFrom(...words), { minLength: 1, maxLength: 4 })
        .map((picked) => `Mentions ${picked.join(" and ")}`),
      type: fc.constantFrom<MemoryType>("fact", "preference", "event", "context"),
      importance: fc.double({ min: 0, max: 1, noNaN: true }),
      ageDays: fc.integer({ min: 0, max: 400 }),
      occurredAt: fc.option(
        fc.integer({ min: 0, max: 60 }).map((days) => now - days * DAY),
        { nil: undefined }
      ),
      vector: fc.option(fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 3, maxLength: 3 }), {
        nil: undefined
      })
    })
    const question = fc.constantFrom("tea", "my sister in Porto", "what did I do yesterday?", "this month", "hello", "")
    const direction = fc.option(fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 3, maxLength: 3 }), {
      nil: undefined
    })
    // Small profiles, where a memory without any signal may still reach the floor (the profile-size
    // feature lifts it), and large ones, where only those some signal reaches can.
    const profile = fc.oneof(fc.array(spec, { maxLength: 25 }), fc.array(spec, { minLength: 150, maxLength: 200 }))
    const agree = fc.property(
      profile,
      question,
      direction,
      fc.integer({ min: 1, max: 10 }),
      (specs, text, vector, limit) => {
        // A zero vector has no direction (no embedder returns one): none as the query, none stored.
        if (vector?.every((x) => x === 0)) return
        const index = indexOf(
          specs.map(
            ({ occurredAt, vector: direction, ...rest }): Spec => ({
              ...rest,
              ...(occurredAt === undefined ? {} : { occurredAt }),
              ...(direction === undefined || direction.every((x) => x === 0) ? {} : { vector: direction })
            })
          )
        )
        const query = queryOf(index, text, vector)
        const all = scoreMemories(index, query, settings, now, { limit: specs.length, relevantOnly: false })
        expect(all).toHaveLength(specs.length)
        const injected = scoreMemories(index, query, settings, now, { limit, relevantOnly: true })
        expect(injected.map((s) => s.memory.id)).toEqual(
          all
            .filter((s) => s.relevant)
            .slice(0, limit)
            .map((s) => s.memory.id)
        )
      }
    )
    fc.assert(agree, { numRuns: 300 })
    // The seed that found a memory relevant by its keywords alone, ranked by the vector's weights past the
    // first 40, which injection left out and the full ranking kept.
    fc.assert(agree, { numRuns: 100, seed: -1351642641 })
  })
})

describe("quantised vectors", () => {
  it("keep cosine similarity to within 0.01", () => {
    let seed = 7
    const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1
    for (let trial = 0; trial < 20; trial++) {
      const a = Array.from({ length: 512 }, random)
      const b = a.map((x) => x + random() * 0.8)
      const exact = [...normalize(a)].reduce((sum, x, i) => sum + x * normalize(b)[i]!, 0)
      const matrix = buildMemoryIndex(
        [{ memory: memory({ content: "x" }, 0), terms: termsOf("x"), vector: quantize(b) }],
        "m"
      ).vectors!
      const out = new Float32Array(1)
      cosineRows(matrix, normalize(a), 0, 1, out)
      expect(Math.abs(out[0]! - exact)).toBeLessThan(0.01)
    }
  })
})
