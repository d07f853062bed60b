import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ApiValidation } from "../http/ApiValidation.ts"

/** `/api/plugins`: the loaded plugins and their hook statistics. */
export class PluginsGroup extends HttpApiGroup.make("plugins")
  .add(
    HttpApiEndpoint.get("list", "/", {
      success: Schema.Struct({
        plugins: Schema.Array(
          Schema.Struct({
            name: Schema.String,
            required: Schema.Boolean,
            hooks: Schema.Array(Schema.String),
            valueTypes: Schema.Array(Schema.String),
            calls: Schema.Int,
            failures: Schema.Int,
            timeouts: Schema.Int
          })
        )
      })
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List plugins",
        description: "The loaded plugins in the order their hooks run, with their hook calls, failures and timeouts"
      })
    )
  )
  .prefix("/api/plugins")
  .middleware(ApiValidation)
  .annotateMerge(OpenApi.annotations({ description: "The loaded plugins and their hook statistics" })) {}
