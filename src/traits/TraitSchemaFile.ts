import { Result, Schema } from "effect"
import { TraitKey, TraitValueType } from "../domain/Trait.ts"
import { ArrayItemType, CUSTOM_CATEGORY, TraitDefinition } from "./TraitDefinition.ts"

/**
 * The documented file form of a trait schema (`TRAITS_FILE`): a map from trait key to
 * `{ type, enum?, items?, description?, category?, extraction?, injection? }`.
 */
const TraitSchemaEntry = Schema.Struct({
  type: TraitValueType,
  enum: Schema.optionalKey(Schema.Array(Schema.NonEmptyString).check(Schema.isMinLength(1))),
  items: Schema.optionalKey(Schema.Struct({ type: ArrayItemType })),
  description: Schema.optionalKey(Schema.String),
  category: Schema.optionalKey(Schema.NonEmptyString),
  extraction: Schema.optionalKey(Schema.Struct({ enabled: Schema.Boolean })),
  injection: Schema.optionalKey(Schema.Struct({
    enabled: Schema.optionalKey(Schema.Boolean),
    template: Schema.optionalKey(Schema.String)
  })),
  behaviour: Schema.optionalKey(Schema.NonEmptyString)
})
export type TraitSchemaEntry = typeof TraitSchemaEntry.Type

export const TraitSchemaFile = Schema.Record(TraitKey, TraitSchemaEntry)
export type TraitSchemaFile = typeof TraitSchemaFile.Type

/** Turns the file form into definitions; `enum` with `type: "string"` means an enum trait. */
export const toDefinitions = (file: TraitSchemaFile): Result.Result<ReadonlyArray<TraitDefinition>, string> => {
  const definitions: Array<TraitDefinition> = []
  for (const [key, entry] of Object.entries(file)) {
    const isEnum = entry.type === "enum" || (entry.type === "string" && entry.enum !== undefined)
    if (isEnum && entry.enum === undefined) return Result.fail(`${key}: type "enum" needs an "enum" list`)
    if (entry.enum !== undefined && !isEnum) return Result.fail(`${key}: "enum" is only allowed with type "string" or "enum"`)
    if (entry.items !== undefined && entry.type !== "array") return Result.fail(`${key}: "items" is only allowed with type "array"`)
    definitions.push(
      new TraitDefinition({
        key,
        valueType: isEnum ? "enum" : entry.type,
        enumValues: entry.enum ?? [],
        itemType: entry.items?.type ?? "string",
        category: entry.category ?? CUSTOM_CATEGORY,
        description: entry.description ?? "",
        extractionEnabled: entry.extraction?.enabled ?? true,
        injectionEnabled: entry.injection?.enabled ?? true,
        injectionTemplate: entry.injection?.template ?? `${key}: {{value}}`,
        behaviour: entry.behaviour ?? null
      })
    )
  }
  return Result.succeed(definitions)
}
