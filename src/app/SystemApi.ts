import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ServiceUnavailable } from "../http/OpenAiError.ts"

export const HEALTH_PATH = "/health"
export const READY_PATH = "/ready"

/** `/health` and `/ready`: the probes of the process and its database, outside `/api`. */
export class SystemGroup extends HttpApiGroup.make("system", { topLevel: true })
  .add(
    HttpApiEndpoint.get("health", HEALTH_PATH, {
      success: Schema.Struct({ status: Schema.Literal("ok") })
    }).annotateMerge(
      OpenApi.annotations({ summary: "Liveness", description: "Liveness: answers as soon as the port is open" })
    ),
    HttpApiEndpoint.get("ready", READY_PATH, {
      success: Schema.Struct({ status: Schema.Literal("ready") }),
      error: ServiceUnavailable
    }).annotateMerge(OpenApi.annotations({ summary: "Readiness", description: "Readiness: the database answers" }))
  )
  .annotateMerge(OpenApi.annotations({ description: "Liveness and readiness, for probes" })) {}
