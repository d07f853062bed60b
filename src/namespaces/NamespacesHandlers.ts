import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Budgets } from "../budgets/Budgets.ts"
import { currentNamespace, DEFAULT_NAMESPACE, namespaceToCreateIn } from "../domain/Namespace.ts"
import { toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { VirtualKeys } from "../keys/VirtualKeys.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { BudgetRefused } from "./BudgetRefused.ts"
import { NamespacesGroup } from "./NamespacesApi.ts"

export const NamespacesHandlers = HttpApiBuilder.group(
  sliceApi(NamespacesGroup),
  "namespaces",
  Effect.fn(function* (handlers) {
    const profiles = yield* Profiles
    const keys = yield* VirtualKeys
    const budgets = yield* Budgets

    /** The namespace named, if the caller may set its budgets (its whole budget: the global admin only). */
    const budgetable = Effect.fnUntraced(function* (name: string, whole: boolean) {
      const caller = yield* currentNamespace
      // Another namespace's is refused before the name is read: the same answer for every spelling of it.
      if (caller._tag === "One" && caller.name !== name)
        return yield* new BudgetRefused({
          status: 403,
          code: "namespace_not_allowed",
          message: `This key manages namespace '${caller.name}' only`
        })
      const target = namespaceToCreateIn(name, caller)
      if ("refused" in target) return yield* new BudgetRefused(target.refused)
      if (whole && caller._tag === "One")
        return yield* new BudgetRefused({
          status: 403,
          code: "budget_not_allowed",
          message: "A namespace's budget is set by the global admin only"
        })
      return target.name
    })

    return handlers
      .handle("setBudget", ({ params, payload }) =>
        budgetable(params.name, true).pipe(
          Effect.flatMap((name) => budgets.set({ kind: "namespace", subject: name, namespace: name, limit: payload })),
          Effect.map((budget) => ({ budget })),
          Effect.mapError(toApiError)
        )
      )
      .handle("removeBudget", ({ params }) =>
        budgetable(params.name, true).pipe(
          Effect.flatMap((name) => budgets.remove("namespace", name)),
          Effect.map((removed) => ({ removed: Option.isSome(removed) })),
          Effect.mapError(toApiError)
        )
      )
      .handle("setUserBudget", ({ params, payload }) =>
        budgetable(params.name, false).pipe(
          Effect.flatMap((name) => budgets.set({ kind: "user", subject: name, namespace: name, limit: payload })),
          Effect.as({ userBudget: payload }),
          Effect.mapError(toApiError)
        )
      )
      .handle("removeUserBudget", ({ params }) =>
        budgetable(params.name, false).pipe(
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
