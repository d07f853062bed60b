import { readFile } from "node:fs/promises"
import { Context, Effect, Layer, Option, Result, Schema } from "effect"
import type { PerRequestTrait } from "../domain/PerRequestTrait.ts"
import { toDefinition } from "../domain/TraitDeclaration.ts"
import type { TraitDefinition } from "../domain/TraitDefinition.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { defaultTraitSchema } from "./defaultTraitSchema.ts"
import { TraitSchemaFile, type TraitSchemaFile as TraitSchemaFileType, toDefinitions } from "./TraitSchemaFile.ts"
import { TraitsConfig } from "./TraitsConfig.ts"

export class TraitSchemaFileError extends Schema.TaggedError<TraitSchemaFileError>()("TraitSchemaFileError", {
  message: Schema.String
}) {}

/** What definitions may name: the value types and behaviours the loaded plugins provide. */
export interface TraitVocabulary {
  readonly valueTypes: ReadonlyMap<string, unknown>
  readonly behaviours: ReadonlySet<string>
}

/** Why a definition cannot be used, if it names a value type or behaviour no plugin provides. */
const problemOf = (definition: TraitDefinition, vocabulary: TraitVocabulary): string | undefined => {
  if (!vocabulary.valueTypes.has(definition.valueType)) {
    return `${definition.key}: unknown value type '${definition.valueType}' (known: ${[...vocabulary.valueTypes.keys()].join(", ")})`
  }
  if (definition.behaviour !== null && !vocabulary.behaviours.has(definition.behaviour)) {
    return `${definition.key}: unknown behaviour '${definition.behaviour}' (no loaded plugin with an extract hook has that name)`
  }
  return undefined
}

/** The trait schema in effect: the built-in default, or the operator's `TRAITS_FILE`. */
export class TraitSchema extends Context.Service<
  TraitSchema,
  {
    readonly definitions: ReadonlyMap<string, TraitDefinition>
    readonly lookup: (key: string) => Option.Option<TraitDefinition>
    /**
     * The schema in effect for one request: per-request declarations merged over the configured ones
     * by key; fails with the reason when a declaration names an unknown value type or behaviour.
     */
    readonly withRequestTraits: (
      traits: ReadonlyArray<PerRequestTrait>
    ) => Result.Result<ReadonlyMap<string, TraitDefinition>, string>
  }
>()("gateway/traits/TraitSchema") {
  static readonly make = (
    file: TraitSchemaFileType,
    vocabulary: TraitVocabulary
  ): Effect.Effect<TraitSchema["Service"], TraitSchemaFileError> =>
    Effect.gen(function* () {
      const list = yield* Result.match(toDefinitions(file), {
        onFailure: (message) => Effect.fail(new TraitSchemaFileError({ message })),
        onSuccess: Effect.succeed
      })
      for (const definition of list) {
        const problem = problemOf(definition, vocabulary)
        if (problem !== undefined) return yield* new TraitSchemaFileError({ message: problem })
      }
      const definitions = new Map(list.map((definition) => [definition.key, definition]))
      return TraitSchema.of({
        definitions,
        lookup: (key) => Option.fromUndefinedOr(definitions.get(key)),
        withRequestTraits: (traits) => {
          if (traits.length === 0) return Result.succeed(definitions)
          const merged = new Map(definitions)
          for (const trait of traits) {
            const definition = toDefinition(trait.key, trait.valueType, trait, definitions.get(trait.key))
            const problem = problemOf(definition, vocabulary)
            if (problem !== undefined) return Result.fail(problem)
            merged.set(trait.key, definition)
          }
          return Result.succeed(merged)
        }
      })
    })

  static readonly layer = Layer.effect(
    TraitSchema,
    Effect.gen(function* () {
      const traitsFile = (yield* TraitsConfig).file
      const vocabulary = yield* PluginHost
      if (Option.isNone(traitsFile)) return yield* TraitSchema.make(defaultTraitSchema, vocabulary)
      const file = traitsFile.value
      const text = yield* Effect.tryPromise({
        try: () => readFile(file, "utf8"),
        catch: (cause) => new TraitSchemaFileError({ message: `TRAITS_FILE ${file}: cannot read (${String(cause)})` })
      })
      const parsed = yield* Schema.decodeEffect(Schema.fromJsonString(TraitSchemaFile))(text).pipe(
        Effect.mapError((error) => new TraitSchemaFileError({ message: `TRAITS_FILE ${file}: ${error.message}` }))
      )
      return yield* TraitSchema.make(parsed, vocabulary).pipe(
        Effect.mapError((error) => new TraitSchemaFileError({ message: `TRAITS_FILE ${file}: ${error.message}` }))
      )
    })
  )
}
