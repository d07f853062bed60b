import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { currentNamespace, DEFAULT_NAMESPACE } from "../domain/Namespace.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { VirtualKeys } from "../keys/VirtualKeys.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { NamespacesGroup } from "./NamespacesApi.ts"

export const NamespacesHandlers = HttpApiBuilder.group(
  sliceApi(NamespacesGroup),
  "namespaces",
  Effect.fn(function* (handlers) {
    const profiles = yield* Profiles
    const keys = yield* VirtualKeys
    return handlers.handle("list", () =>
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
          namespaces: [...names].sort().map((name) => ({
            name,
            profiles: countIn(profileCounts, name),
            keys: countIn(keyCounts, name)
          }))
        }
      })
    )
  })
)
