import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ServiceUnavailable } from "./OpenAiError.ts"

/** `/health` and `/ready`: the probes of the process and its database, outside `/api`. */
export class SystemGroup extends HttpApiGroup.make("system", { topLevel: true })
  .add(
    HttpApiEndpoint.get("health", "/health", {
      success: Schema.Struct({ status: Schema.Literal("ok") })
    }).annotateMerge(
      OpenApi.annotations({ summary: "Liveness", description: "Liveness: answers as soon as the port is open" })
    ),
    HttpApiEndpoint.get("ready", "/ready", {
      success: Schema.Struct({ status: Schema.Literal("ready") }),
      error: ServiceUnavailable
    }).annotateMerge(OpenApi.annotations({ summary: "Readiness", description: "Readiness: the database answers" }))
  )
  .annotateMerge(OpenApi.annotations({ description: "Liveness and readiness, for probes" })) {}
