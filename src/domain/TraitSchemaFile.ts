import { Result, Schema } from "effect"
import type { PerRequestTrait } from "./PerRequestTrait.ts"
import { TraitKey, TraitValueType } from "./Trait.ts"
import { declarationFields, toDefinition } from "./TraitDeclaration.ts"
import type { TraitDefinition } from "./TraitDefinition.ts"

/**
 * The documented file form of a trait schema (`TRAITS_FILE`): a map from trait key to
 * `{ type, enum?, items?, description?, category?, extraction?, injection?, behaviour? }`. The
 * operator's own file: free text is not bounded.
 */
const TraitSchemaEntry = Schema.Struct({
  type: TraitValueType,
  ...declarationFields({ text: Schema.String, name: Schema.NonEmptyString })
})

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

/** What definitions may name: the value types and behaviours the loaded plugins provide. */
export interface TraitVocabulary {
  readonly valueTypes: ReadonlyMap<string, unknown>
  readonly behaviours: ReadonlySet<string>
}

/** Why a definition cannot be used, if it names a value type or behaviour no plugin provides. */
const vocabularyProblem = (definition: TraitDefinition, vocabulary: TraitVocabulary): string | undefined => {
  if (!vocabulary.valueTypes.has(definition.valueType)) {
    return `${definition.key}: unknown value type '${definition.valueType}' (known: ${[...vocabulary.valueTypes.keys()].join(", ")})`
  }
  if (definition.behaviour !== null && !vocabulary.behaviours.has(definition.behaviour)) {
    return `${definition.key}: unknown behaviour '${definition.behaviour}' (no loaded plugin with an extract hook has that name)`
  }
  return undefined
}

/** The file's definitions, each checked against what the plugins provide; the first problem otherwise. */
export const checkedDefinitions = (
  file: TraitSchemaFile,
  vocabulary: TraitVocabulary
): Result.Result<ReadonlyArray<TraitDefinition>, string> =>
  Result.flatMap(toDefinitions(file), (definitions) => {
    for (const definition of definitions) {
      const problem = vocabularyProblem(definition, vocabulary)
      if (problem !== undefined) return Result.fail(problem)
    }
    return Result.succeed(definitions)
  })

/**
 * Per-request declarations merged over a schema's definitions by key (a part a declaration leaves out
 * comes from the definition it overrides); the first problem otherwise.
 */
export const withDeclarations = (
  base: ReadonlyMap<string, TraitDefinition>,
  traits: ReadonlyArray<PerRequestTrait>,
  vocabulary: TraitVocabulary
): Result.Result<ReadonlyMap<string, TraitDefinition>, string> => {
  if (traits.length === 0) return Result.succeed(base)
  const merged = new Map(base)
  for (const trait of traits) {
    const definition = toDefinition(trait.key, trait.valueType, trait, base.get(trait.key))
    const problem = vocabularyProblem(definition, vocabulary)
    if (problem !== undefined) return Result.fail(problem)
    merged.set(trait.key, definition)
  }
  return Result.succeed(merged)
}
