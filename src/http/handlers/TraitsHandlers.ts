import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileStore } from "../../store/ProfileStore.ts"
import { GatewayApi } from "../Api.ts"
import { invalidTraitValue, profileNotFound, traitNotFound } from "./domainErrors.ts"

/** Confidence of a trait set by hand when the caller gives none. */
const MANUAL_CONFIDENCE = 1

export const TraitsHandlers = HttpApiBuilder.group(
  GatewayApi,
  "traits",
  Effect.fn(function*(handlers) {
    const store = yield* ProfileStore
    return handlers
      .handle("list", ({ params }) =>
        store.listTraits(params.id).pipe(
          Effect.map((traits) => ({ traits })),
          Effect.catchTags({ ProfileNotFound: profileNotFound })
        ))
      .handle("put", ({ params, payload }) =>
        store.putManualTrait(params.id, params.key, payload.value, payload.confidence ?? MANUAL_CONFIDENCE).pipe(
          Effect.map((trait) => ({ trait })),
          Effect.catchTags({ ProfileNotFound: profileNotFound, InvalidTraitValue: invalidTraitValue })
        ))
      .handle("history", ({ params }) =>
        store.traitHistory(params.id, params.key).pipe(
          Effect.map((history) => ({ history })),
          Effect.catchTags({ ProfileNotFound: profileNotFound })
        ))
      .handle("remove", ({ params }) =>
        store.deleteTrait(params.id, params.key).pipe(
          Effect.as({ success: true as const }),
          Effect.catchTags({ ProfileNotFound: profileNotFound, TraitNotFound: traitNotFound })
        ))
  })
)
