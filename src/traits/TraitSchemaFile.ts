import { Result, Schema } from "effect"
import { TraitKey, TraitValueType } from "../domain/Trait.ts"
import { declarationFields, toDefinition } from "../domain/TraitDeclaration.ts"
import type { TraitDefinition } from "../domain/TraitDefinition.ts"

/**
 * The documented file form of a trait schema (`TRAITS_FILE`): a map from trait key to
 * `{ type, enum?, items?, description?, category?, extraction?, injection?, behaviour? }`. The
 * operator's own file: free text is not bounded.
 */
const TraitSchemaEntry = Schema.Struct({
  type: TraitValueType,
  ...declarationFields({ text: Schema.String, name: Schema.NonEmptyString })
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
    if (entry.enum !== undefined && !isEnum)
      return Result.fail(`${key}: "enum" is only allowed with type "string" or "enum"`)
    if (entry.items !== undefined && entry.type !== "array")
      return Result.fail(`${key}: "items" is only allowed with type "array"`)
    definitions.push(toDefinition(key, isEnum ? "enum" : entry.type, entry))
  }
  return Result.succeed(definitions)
}
