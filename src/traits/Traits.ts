import { Context, Effect, Layer, Option, Result } from "effect"
import { layerDefaults } from "../config/defaults.ts"
import { InvalidTraitValue, ProfileNotFound, TraitNotFound } from "../domain/errors.ts"
import type { TraitChange } from "../domain/History.ts"
import type { Trait, TraitSource } from "../domain/Trait.ts"
import { CUSTOM_CATEGORY } from "../domain/TraitDefinition.ts"
import { PluginConfig, pluginFromEnv } from "../plugins/PluginConfig.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { NamespaceTraitSchemas } from "./NamespaceTraitSchemas.ts"
import { TraitsConfig, traitsFromEnv } from "./TraitsConfig.ts"
import { TraitsRepo } from "./TraitsRepo.ts"
import { type TraitTyping, validateTraitValue } from "./validateTraitValue.ts"

/** Confidence of a trait set by hand when the caller gives none. */
const MANUAL_CONFIDENCE = 1

/** How a trait is written: its confidence (1 unless given) and source (`manual` unless given). */
export interface TraitWriteOptions {
  readonly confidence?: number | undefined
  /** `extracted` restores a learned trait (an import from an export): extraction keeps updating it. */
  readonly source?: TraitSource | undefined
}

/**
 * Traits set, read and removed by hand through the management API (a trait set with source
 * `extracted` restores a learned one, as `pmg profiles import` does: extraction goes on updating it). A value is checked against the
 * trait schema (a declared trait's type) or, for an undeclared key, against the type of the value it
 * already has; the types are the plugin host's. A manual trait is never overwritten by extraction
 * (that rule is the extraction store's merge). A change drops the profile's cached context.
 */
export class Traits extends Context.Service<
  Traits,
  {
    readonly list: (ref: string) => Effect.Effect<ReadonlyArray<Trait>, ProfileNotFound>
    /** Sets a trait: source `manual` and confidence 1 unless given. */
    readonly put: (
      ref: string,
      key: string,
      value: unknown,
      options?: TraitWriteOptions
    ) => Effect.Effect<Trait, ProfileNotFound | InvalidTraitValue>
    /** Sets a trait by hand: source `manual`, confidence 1 unless given. */
    readonly putManual: (
      ref: string,
      key: string,
      value: unknown,
      confidence?: number | undefined
    ) => Effect.Effect<Trait, ProfileNotFound | InvalidTraitValue>
    readonly remove: (ref: string, key: string) => Effect.Effect<void, ProfileNotFound | TraitNotFound>
    /** Every change of one trait, newest first. */
    readonly history: (ref: string, key: string) => Effect.Effect<ReadonlyArray<TraitChange>, ProfileNotFound>
  }
>()("gateway/traits/Traits") {
  /** Needs the database (`PgClient`), the `PluginHost` and the `TraitsConfig` section. */
  static readonly layer = Layer.effect(
    Traits,
    Effect.gen(function* () {
      const repo = yield* TraitsRepo
      const profiles = yield* Profiles
      const traitSchemas = yield* NamespaceTraitSchemas
      const valueTypes = (yield* PluginHost).valueTypes
      const cache = yield* SnapshotCache

      const list = Effect.fn("Traits.list")(function* (ref: string) {
        const profile = yield* profiles.find(ref)
        return yield* repo.ofProfile(profile.id)
      })

      const put = Effect.fn("Traits.put")(function* (
        ref: string,
        key: string,
        input: unknown,
        options: TraitWriteOptions = {}
      ) {
        const profile = yield* profiles.find(ref)
        const definition = Option.fromUndefinedOr(traitSchemas.definitions(profile.namespace).get(key))
        const typing: TraitTyping = Option.isSome(definition)
          ? { _tag: "Declared", definition: definition.value }
          : Option.match(yield* repo.valueTypeOf(profile.id, key), {
              onNone: () => ({ _tag: "New" }),
              onSome: (valueType) => ({ _tag: "Established", valueType })
            })
        const valid = validateTraitValue(valueTypes, typing, input)
        if (Result.isFailure(valid)) return yield* new InvalidTraitValue({ key, reason: valid.failure })
        const written = yield* repo
          .put({
            profileId: profile.id,
            key,
            value: valid.success.value,
            valueType: valid.success.valueType,
            category: Option.match(definition, { onNone: () => CUSTOM_CATEGORY, onSome: (d) => d.category }),
            confidence: options.confidence ?? MANUAL_CONFIDENCE,
            source: options.source ?? "manual",
            // An undeclared trait keeps the type of its first value, even against a concurrent writer.
            sameTypeOnly: Option.isNone(definition)
          })
          .pipe(Effect.catchTag("ProfileDeleted", () => Effect.fail(new ProfileNotFound({ ref }))))
        if (Option.isNone(written)) {
          return yield* new InvalidTraitValue({ key, reason: "the trait was just written with a different type" })
        }
        yield* cache.invalidate(profile.id)
        return written.value
      })

      const remove = Effect.fn("Traits.remove")(function* (ref: string, key: string) {
        const profile = yield* profiles.find(ref)
        if (!(yield* repo.remove(profile.id, key))) return yield* new TraitNotFound({ key })
        yield* cache.invalidate(profile.id)
      })

      const history = Effect.fn("Traits.history")(function* (ref: string, key: string) {
        const profile = yield* profiles.find(ref)
        return yield* repo.history(profile.id, key)
      })

      const putManual = (ref: string, key: string, value: unknown, confidence?: number | undefined) =>
        put(ref, key, value, { confidence, source: "manual" })

      return Traits.of({ list, put, putManual, remove, history })
    })
  ).pipe(Layer.provide([TraitsRepo.layer, SnapshotCache.layer, Profiles.layer, NamespaceTraitSchemas.layer]))

  /**
   * The live service on the database you provide, with the default trait schema, no plugins but the
   * built-in one, and `Profiles.layerTest` (whose services are in the output).
   */
  static readonly layerTest = Traits.layer.pipe(
    Layer.provide(PluginHost.layer()),
    Layer.provide(Layer.merge(layerDefaults(TraitsConfig, traitsFromEnv), layerDefaults(PluginConfig, pluginFromEnv))),
    Layer.provideMerge(Profiles.layerTest)
  )
}
