import { Effect, Schema } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"
import { currentNamespace } from "../domain/Namespace.ts"
import { toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { Routes } from "./Routes.ts"
import { RoutesGroup, type RoutesView } from "./RoutesApi.ts"
import { RoutingConfig } from "./RoutingConfig.ts"

/** The routes are the whole gateway's: a namespace's admin does not see them. */
class RoutesNotAllowed
  extends Schema.TaggedError<RoutesNotAllowed>()("RoutesNotAllowed", {})
  implements ClientFacing<403>
{
  get clientError() {
    return clientError(403, "routes_not_allowed", "The routes are the global admin's only")
  }
}

export const RoutesHandlers = HttpApiBuilder.group(
  sliceApi(RoutesGroup),
  "routes",
  Effect.fn(function* (handlers) {
    const routes = yield* Routes
    const { retries } = yield* RoutingConfig

    const view = (): RoutesView => {
      const now = Date.now()
      return {
        file: routes.file ?? null,
        retries,
        routes: routes.list().map((route) => ({
          model: route.model,
          targets: route.targets.map((target) => ({
            target: target.label,
            provider: target.provider,
            model: target.model,
            baseUrl: target.baseUrl,
            apiKeyEnv: target.apiKeyEnv ?? null,
            keyId: target.keyId ?? null,
            order: target.order,
            weight: target.weight,
            timeoutMs: target.timeoutMs ?? null,
            retries: target.retries ?? retries,
            breaker: target.breaker.state(now)
          }))
        }))
      }
    }
    const globalAdmin = Effect.flatMap(currentNamespace, (scope) =>
      scope._tag === "One" ? Effect.fail(toApiError(new RoutesNotAllowed())) : Effect.void
    )

    return handlers
      .handle("list", () => Effect.andThen(globalAdmin, Effect.sync(view)))
      .handle("reload", () =>
        globalAdmin.pipe(
          Effect.andThen(routes.reload.pipe(Effect.mapError(toApiError))),
          Effect.andThen(Effect.sync(view))
        )
      )
  })
)
