import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { HttpApiBuilder } from "effect/http-api"
import { GatewayApi } from "../Api.ts"
import { ServiceUnavailable } from "../OpenAiError.ts"

export const SystemHandlers = HttpApiBuilder.group(
  GatewayApi,
  "system",
  Effect.fn(function*(handlers) {
    const sql = yield* SqlClient.SqlClient
    return handlers
      .handle("health", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () =>
        sql`SELECT 1`.pipe(
          Effect.timeout("2 seconds"),
          Effect.as({ status: "ready" as const }),
          Effect.catchCause((cause) =>
            Effect.logWarning("readiness check failed", cause).pipe(
              Effect.andThen(Effect.fail(ServiceUnavailable.of("database_unavailable", "The database is not reachable")))
            )
          )
        ))
  })
)
