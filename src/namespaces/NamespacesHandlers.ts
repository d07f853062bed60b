import { Effect, Option, Result } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Budgets } from "../budgets/Budgets.ts"
import { currentNamespace, DEFAULT_NAMESPACE } from "../domain/Namespace.ts"
import type { NamespaceSettingsInput } from "../domain/NamespaceSettings.ts"
import { checkedDefinitions } from "../domain/TraitSchemaFile.ts"
import { BadRequest, toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { VirtualKeys } from "../keys/VirtualKeys.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { NamespaceSettingsStore } from "../settings/NamespaceSettingsStore.ts"
import { NamespaceRefused, namespaceToManage } from "./NamespaceRefused.ts"
import { NamespacesGroup } from "./NamespacesApi.ts"

export const NamespacesHandlers = HttpApiBuilder.group(
  sliceApi(NamespacesGroup),
  "namespaces",
  Effect.fn(function* (handlers) {
    const profiles = yield* Profiles
    const keys = yield* VirtualKeys
    const budgets = yield* Budgets
    const settings = yield* NamespaceSettingsStore
    const host = yield* PluginHost

    /** The namespace named, if the caller may manage it; its whole budget (`whole`): the global admin only. */
    const manageable = Effect.fnUntraced(function* (name: string, whole: boolean) {
      const namespace = yield* namespaceToManage(name)
      if (whole && (yield* currentNamespace)._tag === "One")
        return yield* new NamespaceRefused({
          status: 403,
          code: "budget_not_allowed",
          message: "A namespace's budget is set by the global admin only"
        })
      return namespace
    })

    /** The settings, once their trait schema names only value types and behaviours the plugins provide. */
    const writeSettings = Effect.fnUntraced(function* (name: string, input: NamespaceSettingsInput, merge: boolean) {
      const namespace = yield* manageable(name, false)
      if (input.traitSchema !== undefined && input.traitSchema !== null) {
        const checked = checkedDefinitions(input.traitSchema, host)
        if (Result.isFailure(checked))
          return yield* BadRequest.of("invalid_trait_schema", `traitSchema: ${checked.failure}`, "traitSchema")
      }
      return yield* settings.write(namespace, input, { merge })
    })

    return handlers
      .handle("settings", ({ params }) =>
        manageable(params.name, false).pipe(Effect.flatMap(settings.get), Effect.mapError(toApiError))
      )
      .handle("putSettings", ({ params, payload }) =>
        writeSettings(params.name, payload, false).pipe(
          Effect.catchTag("NamespaceRefused", (refused) => Effect.fail(toApiError(refused)))
        )
      )
      .handle("patchSettings", ({ params, payload }) =>
        writeSettings(params.name, payload, true).pipe(
          Effect.catchTag("NamespaceRefused", (refused) => Effect.fail(toApiError(refused)))
        )
      )
      .handle("setBudget", ({ params, payload }) =>
        manageable(params.name, true).pipe(
          Effect.flatMap((name) => budgets.set({ kind: "namespace", subject: name, namespace: name, limit: payload })),
          Effect.map((budget) => ({ budget })),
          Effect.mapError(toApiError)
        )
      )
      .handle("removeBudget", ({ params }) =>
        manageable(params.name, true).pipe(
          Effect.flatMap((name) => budgets.remove("namespace", name)),
          Effect.map((removed) => ({ removed: Option.isSome(removed) })),
          Effect.mapError(toApiError)
        )
      )
      .handle("setUserBudget", ({ params, payload }) =>
        manageable(params.name, false).pipe(
          Effect.flatMap((name) => budgets.set({ kind: "user", subject: name, namespace: name, limit: payload })),
          Effect.as({ userBudget: payload }),
          Effect.mapError(toApiError)
        )
      )
      .handle("removeUserBudget", ({ params }) =>
        manageable(params.name, false).pipe(
          Effect.flatMap((name) => budgets.remove("user", name)),
          Effect.map((removed) => ({ removed: Option.isSome(removed) })),
          Effect.mapError(toApiError)
        )
      )
      .handle("list", () =>
        Effect.gen(function* () {
          const scope = yield* currentNamespace
          const [profileCounts, keyCounts] = yield* Effect.all(
            [profiles.countByNamespace, keys.countByNamespace(scope)],
            { concurrency: 2 }
          )
          const names = new Set([
            scope._tag === "One" ? scope.name : DEFAULT_NAMESPACE,
            ...profileCounts.map((row) => row.namespace),
            ...keyCounts.map((row) => row.namespace)
          ])
          const countIn = (rows: typeof profileCounts, name: string) =>
            rows.find((row) => row.namespace === name)?.count ?? 0
          return {
            namespaces: yield* Effect.forEach([...names].sort(), (name) =>
              Effect.map(
                Effect.all([budgets.get("namespace", name), budgets.limitOf("user", name)]),
                ([budget, userBudget]) => ({
                  name,
                  profiles: countIn(profileCounts, name),
                  keys: countIn(keyCounts, name),
                  budget: budget ?? null,
                  userBudget: userBudget ?? null
                })
              )
            )
          }
        })
      )
  })
)
