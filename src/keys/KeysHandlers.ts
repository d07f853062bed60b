import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { instantOf } from "../domain/Memory.ts"
import { currentNamespace } from "../domain/Namespace.ts"
import { toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { CurrentKey } from "./CurrentKey.ts"
import { DEFAULT_GRACE_SECONDS, KeyCreated, KeysGroup } from "./KeysApi.ts"
import { VirtualKeys } from "./VirtualKeys.ts"

export const KeysHandlers = HttpApiBuilder.group(
  sliceApi(KeysGroup),
  "keys",
  Effect.fn(function* (handlers) {
    const keys = yield* VirtualKeys
    return handlers
      .handle("create", ({ payload }) =>
        Effect.all([currentNamespace, CurrentKey]).pipe(
          Effect.flatMap(([caller, creator]) =>
            keys.create(
              {
                namespace: payload.namespace,
                scope: payload.scope ?? "app",
                label: payload.label,
                rateLimitPerMinute: payload.rateLimitPerMinute,
                upstream: payload.upstream,
                expiresAt:
                  payload.expiresAt === undefined || payload.expiresAt === null
                    ? payload.expiresAt
                    : instantOf(payload.expiresAt)
              },
              caller,
              creator
            )
          ),
          Effect.map(({ apiKey, key }) => new KeyCreated({ ...apiKey, key })),
          Effect.mapError(toApiError)
        )
      )
      .handle("list", () =>
        Effect.flatMap(currentNamespace, (caller) => Effect.map(keys.list(caller), (list) => ({ keys: list })))
      )
      .handle("rotate", ({ params, payload }) =>
        Effect.all([currentNamespace, CurrentKey]).pipe(
          Effect.flatMap(([caller, rotator]) =>
            keys.rotate(params.id, payload.graceSeconds ?? DEFAULT_GRACE_SECONDS, caller, rotator)
          ),
          Effect.map(({ apiKey, key }) => new KeyCreated({ ...apiKey, key })),
          Effect.mapError(toApiError)
        )
      )
      .handle("revoke", ({ params }) =>
        Effect.all([currentNamespace, CurrentKey]).pipe(
          Effect.flatMap(([caller, revoker]) => keys.revoke(params.id, caller, revoker)),
          Effect.map((key) => ({ key })),
          Effect.mapError(toApiError)
        )
      )
  })
)
