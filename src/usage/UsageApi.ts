import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ApiValidation } from "../http/ApiValidation.ts"
import { BadRequest } from "../http/OpenAiError.ts"
import { UsageGrouping, UsageRow } from "./UsageReport.ts"

/** A usage report's query: the grouping, the days (UTC, both included) and, optionally, one user or key. */
export const UsageQuery = {
  groupBy: Schema.optionalKey(UsageGrouping),
  from: Schema.optionalKey(Schema.String),
  to: Schema.optionalKey(Schema.String)
}

/** A usage report: the days it covers and one row per group. */
export const UsageReportBody = Schema.Struct({
  period: Schema.Struct({ from: Schema.String, to: Schema.String }),
  usage: Schema.Array(UsageRow)
})

/** `/api/usage`: the tokens the namespace's traffic and the gateway's memory work took. */
export class UsageGroup extends HttpApiGroup.make("usage")
  .add(
    HttpApiEndpoint.get("report", "/", {
      query: { ...UsageQuery, userId: Schema.optionalKey(Schema.String), keyId: Schema.optionalKey(Schema.String) },
      success: UsageReportBody,
      error: BadRequest
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Token usage",
        description:
          "The tokens the providers reported for the namespace's requests and for the gateway's own memory work, " +
          "summed per `groupBy` (`key`, `user`, `model`, `namespace`, `day` or `work`; default `day`) over the days " +
          "`from`..`to` (UTC, both included; default the last 30 days), optionally for one `userId` or `keyId`. " +
          "`cost` is priced from `MODEL_PRICES`, `null` when a model in the group has no price."
      })
    )
  )
  .prefix("/api/usage")
  .middleware(ApiValidation)
  .annotateMerge(OpenApi.annotations({ description: "Token usage and its cost" })) {}
