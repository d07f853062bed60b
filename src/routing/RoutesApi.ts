import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ApiValidation } from "../http/ApiValidation.ts"
import { BadRequest, Forbidden } from "../http/OpenAiError.ts"

/** One target of a route as operators see it: where it is, how it is weighed, and its breaker on this replica. */
export const RouteTargetView = Schema.Struct({
  target: Schema.String,
  provider: Schema.String,
  model: Schema.String,
  baseUrl: Schema.String,
  /** The variable the key is read from; `null`: the key the provider is called with anyway. */
  apiKeyEnv: Schema.NullOr(Schema.String),
  /** The key held in the gateway whose bound provider key it uses, if it names one. */
  keyId: Schema.NullOr(Schema.String),
  order: Schema.Int,
  weight: Schema.Finite,
  timeoutMs: Schema.NullOr(Schema.Int),
  retries: Schema.Int,
  breaker: Schema.Literals(["closed", "open", "half_open"])
})

export const RoutesView = Schema.Struct({
  /** `ROUTES_FILE`, or `null` when no routes are configured. */
  file: Schema.NullOr(Schema.String),
  /** The retries every target gets unless it says otherwise (`UPSTREAM_RETRIES`). */
  retries: Schema.Int,
  routes: Schema.Array(Schema.Struct({ model: Schema.String, targets: Schema.Array(RouteTargetView) }))
})
export type RoutesView = typeof RoutesView.Type

/** `/api/routes`: the routed models, their targets and their breakers (the global admin's). */
export class RoutesGroup extends HttpApiGroup.make("routes")
  .add(
    HttpApiEndpoint.get("list", "/", { success: RoutesView, error: Forbidden }).annotateMerge(
      OpenApi.annotations({
        summary: "Routes",
        description:
          "The models `ROUTES_FILE` routes, each with its targets in order: provider, model, base URL, the variable " +
          "its key is read from (never the key), order, weight, timeout, retries, and its circuit breaker's state on " +
          "the replica that answers (`closed`, `open`, `half_open`). The global admin's only."
      })
    )
  )
  .add(
    HttpApiEndpoint.post("reload", "/reload", { success: RoutesView, error: [BadRequest, Forbidden] }).annotateMerge(
      OpenApi.annotations({
        summary: "Reload the routes file",
        description:
          "Reads `ROUTES_FILE` again on the replica that answers (a change to the file or `SIGHUP` does the same). " +
          "A file that is not valid leaves the routes as they were and is answered 400 with what is wrong and its line."
      })
    )
  )
  .prefix("/api/routes")
  .middleware(ApiValidation)
  .annotateMerge(OpenApi.annotations({ description: "Model routes: targets, fallbacks and circuit breakers" })) {}
