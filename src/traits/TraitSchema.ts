import { readFile } from "node:fs/promises"
import { Context, Effect, Layer, Option, Result, Schema } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import { defaultTraitSchema } from "./defaultTraitSchema.ts"
import { type PerRequestTrait, toDefinition } from "./PerRequestTrait.ts"
import type { TraitDefinition } from "./TraitDefinition.ts"
import { type TraitSchemaFile as TraitSchemaFileType, TraitSchemaFile, toDefinitions } from "./TraitSchemaFile.ts"

export class TraitSchemaFileError extends Schema.TaggedError<TraitSchemaFileError>()("TraitSchemaFileError", {
  message: Schema.String
}) {}

/** The trait schema in effect: the built-in default, or the operator's `TRAITS_FILE`. */
export class TraitSchema extends Context.Service<TraitSchema, {
  readonly definitions: ReadonlyMap<string, TraitDefinition>
  readonly lookup: (key: string) => Option.Option<TraitDefinition>
  /** The schema in effect for one request: per-request declarations merged over the configured ones by key. */
  readonly withRequestTraits: (traits: ReadonlyArray<PerRequestTrait>) => ReadonlyMap<string, TraitDefinition>
}>()("gateway/traits/TraitSchema") {
  static readonly make = (file: TraitSchemaFileType): Effect.Effect<TraitSchema["Service"], TraitSchemaFileError> =>
    Result.match(toDefinitions(file), {
      onFailure: (message) => Effect.fail(new TraitSchemaFileError({ message })),
      onSuccess: (list) => {
        const definitions = new Map(list.map((definition) => [definition.key, definition]))
        return Effect.succeed(TraitSchema.of({
          definitions,
          lookup: (key) => Option.fromUndefinedOr(definitions.get(key)),
          withRequestTraits: (traits) => {
            if (traits.length === 0) return definitions
            const merged = new Map(definitions)
            for (const trait of traits) merged.set(trait.key, toDefinition(trait, definitions.get(trait.key)))
            return merged
          }
        }))
      }
    })

  static readonly layer = Layer.effect(
    TraitSchema,
    Effect.gen(function*() {
      const config = yield* AppConfig
      if (Option.isNone(config.traitsFile)) return yield* TraitSchema.make(defaultTraitSchema)
      const file = config.traitsFile.value
      const text = yield* Effect.tryPromise({
        try: () => readFile(file, "utf8"),
        catch: (cause) => new TraitSchemaFileError({ message: `TRAITS_FILE ${file}: cannot read (${String(cause)})` })
      })
      const parsed = yield* Schema.decodeEffect(Schema.fromJsonString(TraitSchemaFile))(text).pipe(
        Effect.mapError((error) => new TraitSchemaFileError({ message: `TRAITS_FILE ${file}: ${error.message}` }))
      )
      return yield* TraitSchema.make(parsed).pipe(
        Effect.mapError((error) => new TraitSchemaFileError({ message: `TRAITS_FILE ${file}: ${error.message}` }))
      )
    })
  )
}
