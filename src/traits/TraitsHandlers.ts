import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { addressedNamespace, currentNamespace } from "../domain/Namespace.ts"
import { toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { NamespaceTraitSchemas } from "./NamespaceTraitSchemas.ts"
import { Traits } from "./Traits.ts"
import { TraitDefinitionsGroup, TraitsGroup } from "./TraitsApi.ts"

export const TraitsHandlers = HttpApiBuilder.group(
  sliceApi(TraitsGroup),
  "traits",
  Effect.fn(function* (handlers) {
    const traits = yield* Traits
    return handlers
      .handle("list", ({ params }) =>
        traits.list(params.id).pipe(
          Effect.map((list) => ({ traits: list })),
          Effect.mapError(toApiError)
        )
      )
      .handle("put", ({ params, payload }) =>
        traits
          .put(params.id, params.key, payload.value, { confidence: payload.confidence, source: payload.source })
          .pipe(
            Effect.map((trait) => ({ trait })),
            Effect.mapError(toApiError)
          )
      )
      .handle("history", ({ params }) =>
        traits.history(params.id, params.key).pipe(
          Effect.map((history) => ({ history })),
          Effect.mapError(toApiError)
        )
      )
      .handle("remove", ({ params }) =>
        traits.remove(params.id, params.key).pipe(Effect.as({ success: true as const }), Effect.mapError(toApiError))
      )
  })
)

export const TraitDefinitionsHandlers = HttpApiBuilder.group(
  sliceApi(TraitDefinitionsGroup),
  "traitDefinitions",
  Effect.fn(function* (handlers) {
    const schemas = yield* NamespaceTraitSchemas
    // The schema of the namespace the caller acts in (the global admin naming none: the gateway's own, `default`'s).
    return handlers.handle("list", () =>
      Effect.map(currentNamespace, (scope) => ({
        definitions: [...schemas.definitions(addressedNamespace(scope)).values()]
      }))
    )
  })
)
