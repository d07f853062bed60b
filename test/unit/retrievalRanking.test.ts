import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import fc from "fast-check"
import { AppConfig } from "../../src/app/AppConfig.ts"
import type { MemoryType } from "../../src/domain/Memory.ts"
import { Embedder } from "../../src/embedding/Embedder.ts"
import { singleQuery } from "../../src/retrieval/conversationQuery.ts"
import { buildMemoryIndex, type CandidateMemory } from "../../src/retrieval/MemoryIndex.ts"
import { Retrieval } from "../../src/retrieval/Retrieval.ts"
import { termsOf } from "../../src/retrieval/terms.ts"
import { UpstreamHttp } from "../../src/upstream/UpstreamHttp.ts"

const LIMIT = 5
const DAY = 86_400_000
const now = Date.UTC(2026, 10, 23, 15)

/** The gateway's ranking with `EMBEDDINGS=off` (keywords, importance, recency) and an injection limit of 5. */
const RankingLive = Retrieval.layer.pipe(
  Layer.provide(Embedder.layer),
  Layer.provide(UpstreamHttp.layer),
  Layer.provide(AppConfig.layer),
  Layer.provide(
    ConfigProvider.layer(ConfigProvider.fromUnknown({ EMBEDDINGS: "off", INJECTION_MAX_MEMORIES: String(LIMIT) }))
  )
)

interface Spec {
  readonly content: string
  readonly type?: MemoryType
  readonly importance?: number
  readonly ageDays?: number
}

const indexOf = (specs: ReadonlyArray<Spec>) =>
  buildMemoryIndex(
    specs.map((spec, i) => ({
      memory: {
        id: `m${i}`,
        content: spec.content,
        type: spec.type ?? "fact",
        importance: spec.importance ?? 0.5,
        decayBase: 1,
        createdAt: now - (spec.ageDays ?? 10) * DAY,
        lastAccessedAt: null,
        reinforcedAt: null,
        occurredAt: null,
        cues: []
      } satisfies CandidateMemory,
      terms: termsOf(spec.content),
      vector: undefined
    })),
    undefined
  )

const contents = (memories: ReadonlyArray<{ readonly memory: CandidateMemory }>) =>
  memories.map((scored) => scored.memory.content)

const unrelated = Array.from({ length: 12 }, (_, i) => ({ content: `Owns bicycle number ${i}` }))

describe("memories to inject", () => {
  it.effect("are all of them, whatever the message, while there are no more than INJECTION_MAX_MEMORIES", () =>
    Effect.gen(function* () {
      const retrieval = yield* Retrieval
      const specs = [
        { content: "Likes green tea", importance: 0.2 },
        { content: "Owns a motorbike", importance: 0.9 },
        { content: "Has two cats" }
      ]
      const chosen = yield* retrieval.forInjection(indexOf(specs), singleQuery("What is 17 times 23?"), now)
      expect(chosen).toMatchObject({ mode: "all", semantic: "off" })
      expect(contents(chosen.memories).sort()).toEqual(specs.map((spec) => spec.content).sort())
      // The most important first.
      expect(contents(chosen.memories)[0]).toBe("Owns a motorbike")
    }).pipe(Effect.provide(RankingLive))
  )

  it.effect("beyond that, are only the ones the message is about, at most INJECTION_MAX_MEMORIES", () =>
    Effect.gen(function* () {
      const retrieval = yield* Retrieval
      const tea = Array.from({ length: 8 }, (_, i) => ({ content: `Drinks tea blend ${i} every morning` }))
      const chosen = yield* retrieval.forInjection(
        indexOf([...unrelated, ...tea]),
        singleQuery("Which tea should I drink?"),
        now
      )
      expect(chosen).toMatchObject({ mode: "keyword", semantic: "off" })
      expect(chosen.memories).toHaveLength(LIMIT)
      expect(contents(chosen.memories).every((content) => content.includes("tea"))).toBe(true)
      expect(chosen.memories.every((scored) => scored.relevant)).toBe(true)
    }).pipe(Effect.provide(RankingLive))
  )

  it.effect("are none when no memory answers the message", () =>
    Effect.gen(function* () {
      const retrieval = yield* Retrieval
      const chosen = yield* retrieval.forInjection(indexOf(unrelated), singleQuery("What is 17 times 23?"), now)
      expect(chosen.memories).toEqual([])
    }).pipe(Effect.provide(RankingLive))
  )
})

describe("a memory search", () => {
  const words = ["tea", "coffee", "bicycle", "cello", "Porto", "garden", "sister", "marathon"]
  const memorySpec = fc.record({
    content: fc
      .array(fc.constantFrom(...words), { minLength: 1, maxLength: 5 })
      .map((picked) => `Mentions ${picked.join(" and ")}`),
    type: fc.constantFrom<MemoryType>("fact", "preference", "event", "context"),
    importance: fc.double({ min: 0, max: 1, noNaN: true }),
    ageDays: fc.integer({ min: 0, max: 2000 })
  })
  const query = fc
    .array(fc.constantFrom(...words, "weather", "what"), { minLength: 0, maxLength: 4 })
    .map((picked) => picked.join(" "))

  it.effect(
    "lists every memory exactly once, best first (newer before older about one subject), when the limit allows",
    () =>
      Effect.gen(function* () {
        const retrieval = yield* Retrieval
        // Ranking without vectors never waits: each search runs to its end synchronously.
        const search = (index: ReturnType<typeof indexOf>, text: string, limit: number) =>
          Effect.runSync(retrieval.search(index, singleQuery(text), now, { limit, type: undefined })).memories
        fc.assert(
          fc.property(fc.array(memorySpec, { maxLength: 30 }), query, (specs, text) => {
            const index = indexOf(specs)
            const found = search(index, text, specs.length + 1)
            expect(found.map((scored) => scored.memory.id).sort()).toEqual(
              index.memories.map((memory) => memory.id).sort()
            )
            // Best first, but for a newer memory moved ahead of an older one about the same subject.
            const byScore = found.filter((scored) => scored.changedFact !== true)
            for (let i = 1; i < byScore.length; i++)
              expect(byScore[i - 1]!.score).toBeGreaterThanOrEqual(byScore[i]!.score)
            // A smaller limit gives the start of the same list.
            if (found.every((scored) => scored.changedFact !== true)) {
              expect(search(index, text, 3).map((scored) => scored.memory.id)).toEqual(
                found.slice(0, 3).map((scored) => scored.memory.id)
              )
            }
          }),
          { numRuns: 200 }
        )
      }).pipe(Effect.provide(RankingLive))
  )

  it.effect("of one type lists only that type", () =>
    Effect.gen(function* () {
      const retrieval = yield* Retrieval
      const specs: ReadonlyArray<Spec> = [
        { content: "Ran a marathon in Porto", type: "event" },
        { content: "Likes running", type: "preference" },
        { content: "Ran a half marathon", type: "event" }
      ]
      const found = yield* retrieval.search(indexOf(specs), singleQuery("marathon"), now, { limit: 10, type: "event" })
      expect(contents(found.memories).sort()).toEqual(["Ran a half marathon", "Ran a marathon in Porto"])
    }).pipe(Effect.provide(RankingLive))
  )
})
