import { Context, Effect, Layer, Result, Schema } from "effect"
import { followVersion } from "../db/repeatInBackground.ts"
import type { PerRequestTrait } from "../domain/PerRequestTrait.ts"
import type { TraitDefinition } from "../domain/TraitDefinition.ts"
import { TraitSchemaFile } from "../domain/TraitSchemaFile.ts"
import { NamespaceSettingsStore } from "../settings/NamespaceSettingsStore.ts"
import { TraitSchema } from "./TraitSchema.ts"

const CHECK_EVERY = "1 second"

const decodeSchema = Schema.decodeUnknownResult(TraitSchemaFile)

/**
 * The trait schema in effect in each namespace: its own (`/api/namespaces/{name}/settings`), else the
 * gateway's. Held in memory for the request path (injection's templates, the traits API's typing) and
 * read again within a second of a change on any replica.
 */
export class NamespaceTraitSchemas extends Context.Service<
  NamespaceTraitSchemas,
  {
    readonly definitions: (namespace: string) => ReadonlyMap<string, TraitDefinition>
    /** The namespace's schema with a request's declarations merged over it (checked by `parse` already). */
    readonly withRequestTraits: (
      namespace: string,
      traits: ReadonlyArray<PerRequestTrait>
    ) => ReadonlyMap<string, TraitDefinition>
  }
>()("gateway/traits/NamespaceTraitSchemas") {
  static readonly layer = Layer.effect(
    NamespaceTraitSchemas,
    Effect.gen(function* () {
      const store = yield* NamespaceSettingsStore
      const gateway = yield* TraitSchema
      let byNamespace = new Map<string, ReadonlyMap<string, TraitDefinition>>()
      let version = ""

      const reload = Effect.gen(function* () {
        const current = yield* store.version
        const next = new Map<string, ReadonlyMap<string, TraitDefinition>>()
        for (const { namespace, traitSchema } of yield* store.traitSchemas) {
          // Checked when it was set; a plugin removed since leaves the namespace on the gateway's schema.
          const checked = Result.flatMap(
            Result.mapError(decodeSchema(traitSchema), (error) => error.message),
            gateway.forNamespace
          )
          if (Result.isFailure(checked)) {
            yield* Effect.logWarning(
              `namespace ${namespace}: its trait schema cannot be used (${checked.failure}); the gateway's applies`
            )
            continue
          }
          next.set(namespace, checked.success)
        }
        byNamespace = next
        version = current
      })
      yield* reload

      // A cheap check each second, a read of the schemas only when some namespace's settings changed.
      yield* followVersion({
        version: store.version,
        reload,
        current: () => version,
        every: CHECK_EVERY,
        failure: "could not read the namespaces' trait schemas"
      })

      const definitions = (namespace: string) => byNamespace.get(namespace) ?? gateway.definitions
      return NamespaceTraitSchemas.of({
        definitions,
        withRequestTraits: (namespace, traits) =>
          Result.getOrElse(gateway.withRequestTraits(traits, definitions(namespace)), () => definitions(namespace))
      })
    })
  ).pipe(Layer.provide([NamespaceSettingsStore.layer, TraitSchema.layer]))
}
