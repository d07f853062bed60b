import { randomUUID } from "node:crypto"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { extractionAtDefaults } from "../../src/extraction/ExtractionConfig.ts"
import { ExtractionRepo } from "../../src/extraction/ExtractionRepo.ts"
import { Profiles } from "../../src/profiles/Profiles.ts"
import { Traits } from "../../src/traits/Traits.ts"
import * as TestDatabase from "../support/database.ts"

// The extraction store beside the slice: its merge is what must leave manual traits alone.
const TraitsWithExtraction = ExtractionRepo.layer.pipe(
  Layer.provide(extractionAtDefaults),
  Layer.provideMerge(Traits.layerTest),
  Layer.provideMerge(TestDatabase.layer)
)

layer(TraitsWithExtraction, { timeout: "60 seconds" })("Traits", (it) => {
  it.effect("keeps a trait set by hand when extraction later finds another value", () =>
    Effect.gen(function* () {
      const traits = yield* Traits
      const { profile } = yield* (yield* Profiles).getOrCreate("manual")
      yield* traits.putManual("manual", "preferred_language", "German", 1)

      const outcome = yield* (yield* ExtractionRepo).applyTrait(
        profile.id,
        { key: "preferred_language", value: "English", valueType: "string", category: "communication", confidence: 1 },
        { jobId: randomUUID(), messageIds: [] }
      )
      assert.strictEqual(outcome, "kept_manual")
      const [trait] = yield* traits.list(profile.id)
      assert.strictEqual(trait?.value, "German")
      assert.strictEqual(trait?.source, "manual")
    })
  )

  it.effect("checks a value against the declared type, or against the type an undeclared trait already has", () =>
    Effect.gen(function* () {
      const traits = yield* Traits
      yield* (yield* Profiles).getOrCreate("typed")
      const declared = yield* traits.putManual("typed", "expertise_level", "Expert", 1).pipe(Effect.flip)
      assert.strictEqual(declared._tag, "InvalidTraitValue")

      const first = yield* traits.putManual("typed", "lucky_number", 7, 1)
      assert.strictEqual(first.valueType, "number")
      const changedType = yield* traits.putManual("typed", "lucky_number", "seven", 1).pipe(Effect.flip)
      assert.strictEqual(changedType._tag, "InvalidTraitValue")
      assert.deepStrictEqual(
        (yield* traits.list("typed")).map((trait) => trait.value),
        [7]
      )
    })
  )

  it.effect("removes a trait and keeps the removal in its history; a second removal finds nothing", () =>
    Effect.gen(function* () {
      const traits = yield* Traits
      yield* (yield* Profiles).getOrCreate("forgetful")
      yield* traits.putManual("forgetful", "name", "Ada", 1)
      yield* traits.remove("forgetful", "name")

      assert.deepStrictEqual(yield* traits.list("forgetful"), [])
      const history = yield* traits.history("forgetful", "name")
      assert.deepStrictEqual(
        history.map((change) => [change.oldValue, change.newValue]),
        [
          ["Ada", null],
          [null, "Ada"]
        ]
      )
      assert.strictEqual((yield* traits.remove("forgetful", "name").pipe(Effect.flip))._tag, "TraitNotFound")
      assert.strictEqual((yield* traits.list("nobody").pipe(Effect.flip))._tag, "ProfileNotFound")
    })
  )
})
