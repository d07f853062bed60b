import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import fc from "fast-check"
import { AppConfig } from "../../src/app/AppConfig.ts"
import { Embedder } from "../../src/embedding/Embedder.ts"
import type { MemoryCandidate } from "../../src/extraction/decodeReply.ts"
import {
  knownMemoriesFor,
  normalizedText,
  prepareMemories,
  trigramSimilarity
} from "../../src/extraction/prepareMemories.ts"
import { buildMemoryIndex, type CandidateMemory } from "../../src/retrieval/MemoryIndex.ts"
import { Retrieval } from "../../src/retrieval/Retrieval.ts"
import { termsOf } from "../../src/retrieval/terms.ts"
import { UpstreamHttp } from "../../src/upstream/UpstreamHttp.ts"

/** Settings as the gateway reads them, from this environment only. */
const environment = ConfigProvider.layer(ConfigProvider.fromUnknown({ EMBEDDINGS: "off" }))

/** The gateway's embedder with `EMBEDDINGS=off`: duplicates are recognised by their spelling alone. */
const EmbeddingsOff = Embedder.layer.pipe(Layer.provide(UpstreamHttp.layer), Layer.provideMerge(AppConfig.layer))

/** EXTRACTION_DEDUPE_SIMILARITY's default. */
const DEDUPE_SIMILARITY = 0.6

const known = (contents: ReadonlyArray<string>, details: (i: number) => Partial<CandidateMemory> = () => ({})) =>
  buildMemoryIndex(
    contents.map((content, i) => ({
      memory: {
        id: `id-${i}`,
        content,
        type: "fact",
        importance: 0.5,
        decayBase: 1,
        createdAt: 0,
        lastAccessedAt: null,
        reinforcedAt: null,
        occurredAt: null,
        cues: [],
        ...details(i)
      } satisfies CandidateMemory,
      terms: termsOf(content),
      vector: undefined
    })),
    undefined
  )

const candidate = (content: string, extra: Partial<MemoryCandidate> = {}): MemoryCandidate => ({
  content,
  type: "fact",
  importance: 0.5,
  ...extra
})

/** What extraction makes of the candidates, given what the profile already knows; and the notes on what it dropped. */
const prepare = (
  memories: ReadonlyArray<string>,
  candidates: ReadonlyArray<MemoryCandidate>,
  refs: Record<string, string> = {}
) =>
  Effect.gen(function* () {
    const dropped: Array<string> = []
    const prepared = yield* prepareMemories(
      yield* Embedder,
      known(memories),
      candidates,
      new Map(Object.entries(refs)),
      DEDUPE_SIMILARITY,
      dropped
    )
    return { prepared, dropped }
  }).pipe(Effect.provide(EmbeddingsOff), Effect.provide(environment))

describe("an extracted memory", () => {
  it.effect("that the profile already has, up to case, spacing and punctuation, reinforces it", () =>
    Effect.gen(function* () {
      const { prepared } = yield* prepare(
        ["Has a dog named Rex", "Had a dog named Rex", "Lives in Porto"],
        [candidate("had a DOG  named rex!"), candidate("Plays the cello")]
      )
      // The same text wins over one spelled almost the same.
      expect(prepared.map((m) => m.duplicateOf)).toEqual(["id-1", undefined])
    })
  )

  it.effect("reworded but spelled much the same, naming the same things, reinforces it", () =>
    Effect.gen(function* () {
      const { prepared } = yield* prepare(
        ["The user has a dog named Rex"],
        [candidate("The user has a dog called Rex")]
      )
      expect(prepared[0]!.duplicateOf).toBe("id-0")
    })
  )

  it.effect("that names other people, places or numbers is a new fact, however alike the wording", () =>
    Effect.gen(function* () {
      const { prepared } = yield* prepare(
        ["The user has 2 cats", "The user's sister lives in Porto"],
        [candidate("The user has 3 cats"), candidate("The user's sister lives in Lisbon")]
      )
      expect(prepared.map((m) => m.duplicateOf)).toEqual([undefined, undefined])
    })
  )

  it.effect("replaces the known memories it names by ref, and is never their duplicate", () =>
    Effect.gen(function* () {
      const { prepared, dropped } = yield* prepare(
        ["Works at Acme"],
        [candidate("Works at Acme", { supersedes: ["m1", "m7"] })],
        { m1: "id-0" }
      )
      expect(prepared[0]).toMatchObject({ supersedes: ["id-0"], duplicateOf: undefined })
      expect(dropped).toEqual(["memories: supersedes names unknown ref 'm7'"])
    })
  )

  it.effect("keeps the date it happened, or is kept without a date that is none", () =>
    Effect.gen(function* () {
      const { prepared, dropped } = yield* prepare(
        [],
        [
          candidate("Ran a marathon", { type: "event", occurred_at: "2026-03-14" }),
          candidate("Moved house", { type: "event", occurred_at: "last spring" }),
          candidate("Likes tea", { occurred_at: null })
        ]
      )
      expect(prepared.map((m) => m.occurredAt)).toEqual([Date.UTC(2026, 2, 14), undefined, undefined])
      expect(dropped).toEqual(["memories: occurred_at 'last spring' is not a date (the memory is kept without it)"])
    })
  )

  it.effect("carries its cues, and no vector while embeddings are off", () =>
    Effect.gen(function* () {
      const { prepared } = yield* prepare(
        [],
        [candidate("Is vegetarian", { cues: ["restaurants", "recipes"] }), candidate("Likes jazz")]
      )
      expect(prepared.map((m) => [m.cues, m.vector])).toEqual([
        [["restaurants", "recipes"], undefined],
        [[], undefined]
      ])
    })
  )
})

describe("spelling similarity (as PostgreSQL's pg_trgm measures it)", () => {
  it("is 1 for the same words, 0 for texts with no trigram in common", () => {
    expect(trigramSimilarity("Likes green tea", "likes GREEN tea!")).toBe(1)
    expect(trigramSimilarity("abc", "xyz")).toBe(0)
    expect(trigramSimilarity("", "")).toBe(0)
  })

  it("is symmetric and between 0 and 1, whatever the texts", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        const ab = trigramSimilarity(a, b)
        expect(ab).toBe(trigramSimilarity(b, a))
        expect(ab >= 0 && ab <= 1).toBe(true)
        if (normalizedText(a) !== "" && normalizedText(a) === normalizedText(b)) expect(ab).toBe(1)
      }),
      { numRuns: 1000 }
    )
  })
})

describe("the known memories shown to the extraction model", () => {
  const RankingLive = Retrieval.layer.pipe(Layer.provideMerge(EmbeddingsOff), Layer.provide(environment))
  const halfLives = { fact: 365, preference: 180, event: 30, context: 60 }
  const now = Date.UTC(2026, 10, 23)

  it.effect(
    "are those closest to the new input first, then the most important others, each under a ref it can name",
    () =>
      Effect.gen(function* () {
        const retrieval = yield* Retrieval
        const contents = Array.from({ length: 40 }, (_, i) =>
          i === 33 ? "Sister Ines lives in Porto" : `Owns bicycle number ${i}`
        )
        const index = known(contents, (i) => ({
          createdAt: now - 10 * 86_400_000,
          importance: i === 7 ? 1 : 0.3,
          occurredAt: i === 33 ? Date.UTC(2020, 0, 2) : null
        }))
        const { known: shown, ids } = yield* knownMemoriesFor(
          retrieval,
          index,
          "I visited my sister in Porto",
          now,
          halfLives
        )
        expect(shown).toHaveLength(25)
        expect(shown[0]).toEqual({ ref: "m1", content: "Sister Ines lives in Porto", occurredOn: "2020-01-02" })
        expect(shown.map((memory) => memory.ref)).toEqual(Array.from({ length: 25 }, (_, i) => `m${i + 1}`))
        expect(new Set(ids.values()).size).toBe(25)
        expect(ids.get("m1")).toBe("id-33")
        // The most important memory is shown whatever the input is about.
        expect([...ids.values()]).toContain("id-7")
      }).pipe(Effect.provide(RankingLive))
  )

  it.effect("for an empty input are the most important ones", () =>
    Effect.gen(function* () {
      const retrieval = yield* Retrieval
      const index = known(
        Array.from({ length: 20 }, (_, i) => `Fact ${i}`),
        (i) => ({ createdAt: now, importance: i / 20 })
      )
      const { known: shown } = yield* knownMemoriesFor(retrieval, index, "  ", now, halfLives)
      expect(shown.map((memory) => memory.content)).toEqual(Array.from({ length: 10 }, (_, i) => `Fact ${19 - i}`))
    }).pipe(Effect.provide(RankingLive))
  )
})
