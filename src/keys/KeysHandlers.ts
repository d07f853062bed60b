import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Budgets } from "../budgets/Budgets.ts"
import { instantOf } from "../domain/Memory.ts"
import { currentNamespace } from "../domain/Namespace.ts"
import { toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { Usage } from "../usage/Usage.ts"
import type { ApiKey } from "./ApiKey.ts"
import { CurrentKey } from "./CurrentKey.ts"
import { DEFAULT_GRACE_SECONDS, KeyCreated, KeysGroup } from "./KeysApi.ts"
import { VirtualKeys } from "./VirtualKeys.ts"

export const KeysHandlers = HttpApiBuilder.group(
  sliceApi(KeysGroup),
  "keys",
  Effect.fn(function* (handlers) {
    const keys = yield* VirtualKeys
    const budgets = yield* Budgets
    const usage = yield* Usage

    /** Each key with its budget's state and its usage this period. */
    const withSpending = Effect.fnUntraced(function* (list: ReadonlyArray<ApiKey>) {
      const states = new Map(
        yield* Effect.forEach(list, (key) =>
          Effect.map(budgets.get("key", key.id), (state) => [key.id, state] as const)
        )
      )
      const periods = new Map(
        [...states].flatMap(([id, state]) => (state === undefined ? [] : [[id, state.period] as const]))
      )
      const usages = yield* usage.ofKeys(
        list.map((key) => key.id),
        periods
      )
      return list.map((key) => ({ ...key, budget: states.get(key.id) ?? null, usage: usages.get(key.id)! }))
    })

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
          Effect.tap(({ apiKey }) =>
            payload.budget === undefined
              ? Effect.void
              : budgets.set({ kind: "key", subject: apiKey.id, namespace: apiKey.namespace, limit: payload.budget })
          ),
          Effect.map(({ apiKey, key }) => new KeyCreated({ ...apiKey, key })),
          Effect.mapError(toApiError)
        )
      )
      .handle("list", () =>
        currentNamespace.pipe(
          Effect.flatMap(keys.list),
          Effect.flatMap(withSpending),
          Effect.map((list) => ({ keys: list }))
        )
      )
      .handle("setBudget", ({ params, payload }) =>
        Effect.all([currentNamespace, CurrentKey]).pipe(
          Effect.flatMap(([caller, actor]) => keys.owned(params.id, caller, actor)),
          Effect.flatMap((key) =>
            budgets.set({ kind: "key", subject: key.id, namespace: key.namespace, limit: payload })
          ),
          Effect.map((budget) => ({ budget })),
          Effect.mapError(toApiError)
        )
      )
      .handle("removeBudget", ({ params }) =>
        Effect.all([currentNamespace, CurrentKey]).pipe(
          Effect.flatMap(([caller, actor]) => keys.owned(params.id, caller, actor)),
          Effect.flatMap((key) => budgets.remove("key", key.id)),
          Effect.map((removed) => ({ removed: Option.isSome(removed) })),
          Effect.mapError(toApiError)
        )
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
