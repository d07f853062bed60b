import { Schema } from "effect"
import { isStorableJsonValue } from "./storableText.ts"
import { TraitKey, TraitValueType } from "./Trait.ts"
import { declarationFields } from "./TraitDeclaration.ts"

/**
 * A trait declared for one request (`service.traits` or the `X-Service-Traits` header): the
 * declaration of `TRAITS_FILE` with its key inside and bounded free text, since every caller can send it.
 * It is merged over the configured trait schema by key, for that request only
 * (`TraitSchema.withRequestTraits`).
 */
export const PerRequestTrait = Schema.Struct({
  key: TraitKey,
  valueType: TraitValueType,
  ...declarationFields({
    text: Schema.String.check(Schema.isMaxLength(1000)),
    name: Schema.NonEmptyString.check(Schema.isMaxLength(64))
  })
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
