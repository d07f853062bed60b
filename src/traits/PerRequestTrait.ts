import { Schema } from "effect"
import { isStorableJsonValue } from "../domain/storableText.ts"
import { TraitKey, TraitValueType } from "../domain/Trait.ts"
import { ArrayItemType, CUSTOM_CATEGORY, TraitDefinition } from "./TraitDefinition.ts"

/**
 * A trait declared for one request (`service.traits` or the `X-Service-Traits` header). It is
 * merged over the configured trait schema by key, for that request only.
 */
export const PerRequestTrait = Schema.Struct({
  key: TraitKey,
  valueType: TraitValueType,
  enum: Schema.optionalKey(Schema.Array(Schema.NonEmptyString).check(Schema.isMinLength(1))),
  items: Schema.optionalKey(Schema.Struct({ type: ArrayItemType })),
  description: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(1000))),
  category: Schema.optionalKey(Schema.NonEmptyString.check(Schema.isMaxLength(64))),
  extraction: Schema.optionalKey(Schema.Struct({ enabled: Schema.Boolean })),
  injection: Schema.optionalKey(Schema.Struct({
    enabled: Schema.optionalKey(Schema.Boolean),
    template: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(1000)))
  })),
  /** A plugin that extracts this trait instead of the model (e.g. `nps`). */
  behaviour: Schema.optionalKey(Schema.NonEmptyString.check(Schema.isMaxLength(64)))
}).check(
  Schema.makeFilter((trait) =>
    trait.valueType === "enum" && trait.enum === undefined
      ? { path: ["enum"], issue: "an enum trait needs its allowed values" }
      : undefined
  ),
  // Declarations are stored with the turn's extraction job.
  isStorableJsonValue
)
export type PerRequestTrait = typeof PerRequestTrait.Type

export const PerRequestTraits = Schema.Array(PerRequestTrait).check(Schema.isMaxLength(100))

/** Fills the unset parts of a per-request declaration from the configured one of the same key. */
export const toDefinition = (trait: PerRequestTrait, configured: TraitDefinition | undefined): TraitDefinition =>
  new TraitDefinition({
    key: trait.key,
    valueType: trait.valueType,
    enumValues: trait.enum ?? configured?.enumValues ?? [],
    itemType: trait.items?.type ?? configured?.itemType ?? "string",
    category: trait.category ?? configured?.category ?? CUSTOM_CATEGORY,
    description: trait.description ?? configured?.description ?? "",
    extractionEnabled: trait.extraction?.enabled ?? configured?.extractionEnabled ?? true,
    injectionEnabled: trait.injection?.enabled ?? configured?.injectionEnabled ?? true,
    injectionTemplate: trait.injection?.template ?? configured?.injectionTemplate ?? `${trait.key}: {{value}}`,
    behaviour: trait.behaviour ?? configured?.behaviour ?? null
  })
