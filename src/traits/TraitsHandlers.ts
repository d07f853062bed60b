import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { TraitSchema } from "./TraitSchema.ts"
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
    const schema = yield* TraitSchema
    return handlers.handle("list", () => Effect.succeed({ definitions: [...schema.definitions.values()] }))
  })
)
