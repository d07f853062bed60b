import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ApiValidation } from "../http/ApiValidation.ts"

export const NamespaceSummary = Schema.Struct({
  name: Schema.String,
  /** Profiles in the namespace. */
  profiles: Schema.Int,
  /** Keys held in the database for the namespace, not revoked nor expired. */
  keys: Schema.Int
})

/** `/api/namespaces`: the namespaces the caller sees, with what each holds. */
export class NamespacesGroup extends HttpApiGroup.make("namespaces")
  .add(
    HttpApiEndpoint.get("list", "/", {
      success: Schema.Struct({ namespaces: Schema.Array(NamespaceSummary) })
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List namespaces",
        description:
          "Every namespace with profiles or live keys, and `default`, by name (a namespace's admin key, or " +
          "`X-Service-Namespace`: that one only), with its counts of profiles and live keys."
      })
    )
  )
  .prefix("/api/namespaces")
  .middleware(ApiValidation)
  .annotateMerge(OpenApi.annotations({ description: "The apps sharing the gateway, each its own space of users" })) {}
