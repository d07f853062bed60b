import { readFile } from "node:fs/promises"
import { Context, Effect, Layer, Option, Result, Schema } from "effect"
import type { PerRequestTrait } from "../domain/PerRequestTrait.ts"
import type { TraitDefinition } from "../domain/TraitDefinition.ts"
import {
  checkedDefinitions,
  TraitSchemaFile,
  type TraitSchemaFile as TraitSchemaFileType,
  type TraitVocabulary,
  withDeclarations
} from "../domain/TraitSchemaFile.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { defaultTraitSchema } from "./defaultTraitSchema.ts"
import { TraitsConfig } from "./TraitsConfig.ts"

export class TraitSchemaFileError extends Schema.TaggedError<TraitSchemaFileError>()("TraitSchemaFileError", {
  message: Schema.String
}) {}

/** Namespaces' trait schemas kept built (the oldest goes first). */
const MAX_CACHED_SCHEMAS = 256

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
      traits: ReadonlyArray<PerRequestTrait>,
      base?: ReadonlyMap<string, TraitDefinition>
    ) => Result.Result<ReadonlyMap<string, TraitDefinition>, string>
    /**
     * The definitions of a namespace's own trait schema (its settings' `traitSchema`, in `TRAITS_FILE`'s
     * form), which replace the configured ones for its extraction; fails with the reason when it names a
     * value type or behaviour no loaded plugin provides (a plugin removed since it was written).
     */
    readonly forNamespace: (file: TraitSchemaFileType) => Result.Result<ReadonlyMap<string, TraitDefinition>, string>
  }
>()("gateway/traits/TraitSchema") {
  static readonly make = (
    file: TraitSchemaFileType,
    vocabulary: TraitVocabulary
  ): Effect.Effect<TraitSchema["Service"], TraitSchemaFileError> =>
    Effect.gen(function* () {
      const list = yield* Result.match(checkedDefinitions(file, vocabulary), {
        onFailure: (message) => Effect.fail(new TraitSchemaFileError({ message })),
        onSuccess: Effect.succeed
      })
      const definitions = new Map(list.map((definition) => [definition.key, definition]))
      // Namespaces' schemas by their JSON text: a job reads its namespace's settings each time.
      const namespaceSchemas = new Map<string, Result.Result<ReadonlyMap<string, TraitDefinition>, string>>()
      return TraitSchema.of({
        definitions,
        lookup: (key) => Option.fromUndefinedOr(definitions.get(key)),
        withRequestTraits: (traits, base = definitions) => withDeclarations(base, traits, vocabulary),
        forNamespace: (schema) => {
          const key = JSON.stringify(schema)
          const cached = namespaceSchemas.get(key)
          if (cached !== undefined) return cached
          const built = Result.map(
            checkedDefinitions(schema, vocabulary),
            (list): ReadonlyMap<string, TraitDefinition> =>
              new Map(list.map((definition) => [definition.key, definition]))
          )
          if (namespaceSchemas.size >= MAX_CACHED_SCHEMAS)
            namespaceSchemas.delete(namespaceSchemas.keys().next().value!)
          namespaceSchemas.set(key, built)
          return built
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
