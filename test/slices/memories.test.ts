import { randomUUID } from "node:crypto"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { UnknownSupersededMemory } from "../../src/domain/errors.ts"
import { Memories } from "../../src/memories/Memories.ts"
import { Profiles } from "../../src/profiles/Profiles.ts"
import { SnapshotCache } from "../../src/snapshots/SnapshotCache.ts"
import * as TestDatabase from "../support/database.ts"

const fact = (content: string, supersedes?: ReadonlyArray<string>) => ({
  content,
  cues: [],
  type: "fact" as const,
  importance: 0.5,
  supersedes
})

const listAll = { type: undefined, limit: 100, offset: 0 }

layer(Memories.layerTest.pipe(Layer.provideMerge(TestDatabase.layer)), { timeout: "60 seconds" })("Memories", (it) => {
  it.effect("keeps a superseded memory, marked, but leaves it out of the context", () =>
    Effect.gen(function* () {
      const memories = yield* Memories
      const { profile } = yield* (yield* Profiles).getOrCreate("mover")
      const old = yield* memories.add("mover", fact("Lives in Berlin"))
      const current = yield* memories.add("mover", fact("Lives in Lisbon", [old.id]))

      const { memories: listed } = yield* memories.list("mover", listAll)
      assert.strictEqual(listed.find((memory) => memory.id === old.id)?.supersededBy, current.id)
      const context = Option.getOrThrow(yield* (yield* SnapshotCache).snapshot(profile))
      assert.deepStrictEqual(
        context.memories.memories.map((memory) => memory.content),
        ["Lives in Lisbon"]
      )
    })
  )

  it.effect("refuses to supersede memories the profile does not have, and stores nothing", () =>
    Effect.gen(function* () {
      const memories = yield* Memories
      yield* (yield* Profiles).getOrCreate("careful")
      const unknown = [randomUUID(), "not-a-uuid"]
      const refused = yield* memories.add("careful", fact("Owns a cat", unknown)).pipe(Effect.flip)
      assert.instanceOf(refused, UnknownSupersededMemory)
      assert.deepStrictEqual(refused.memoryIds, unknown)

      // An import is all or none: one bad reference and none of it is stored.
      const imported = yield* memories
        .importAll("careful", [fact("Owns a dog"), fact("Owns a bird", unknown)])
        .pipe(Effect.flip)
      assert.strictEqual(imported._tag, "UnknownSupersededMemory")
      assert.deepStrictEqual(yield* memories.list("careful", listAll), { memories: [], total: 0 })
    })
  )

  it.effect("imports memories in the order given, then changes and removes one of them", () =>
    Effect.gen(function* () {
      const memories = yield* Memories
      yield* (yield* Profiles).getOrCreate("importer")
      const imported = yield* memories.importAll("importer", [fact("Speaks Welsh"), fact("Plays the harp")])
      assert.strictEqual(imported.duplicates, 0)
      const [first, second] = imported.memories
      assert.deepStrictEqual([first?.content, second?.content], ["Speaks Welsh", "Plays the harp"])

      const changed = yield* memories.update("importer", first!.id, { content: "Speaks Welsh and Breton" })
      assert.strictEqual(changed.content, "Speaks Welsh and Breton")
      yield* memories.remove("importer", second!.id)
      assert.deepStrictEqual(
        (yield* memories.list("importer", listAll)).memories.map((memory) => memory.id),
        [first!.id]
      )

      const gone = yield* memories.update("importer", second!.id, { importance: 1 }).pipe(Effect.flip)
      assert.strictEqual(gone._tag, "MemoryNotFound")
      assert.strictEqual((yield* memories.remove("importer", "not-a-uuid").pipe(Effect.flip))._tag, "MemoryNotFound")
    })
  )
})
