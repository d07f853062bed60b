import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { DatabaseHealth } from "../db/DatabaseHealth.ts"
import { ServiceUnavailable } from "../http/OpenAiError.ts"
import { GatewayApi } from "./Api.ts"

export const SystemHandlers = HttpApiBuilder.group(
  GatewayApi,
  "system",
  Effect.fn(function* (handlers) {
    const health = yield* DatabaseHealth
    return (
      handlers
        .handle("health", () => Effect.succeed({ status: "ok" as const }))
        // Answers within DATABASE_REQUEST_TIMEOUT_MS, whatever state the database is in. A probe, so
        // untraced (HttpServerLive.ts): its query leaves no span either.
        .handle("ready", () =>
          Effect.flatMap(health.check, (ok) =>
            ok
              ? Effect.succeed({ status: "ready" as const })
              : Effect.fail(ServiceUnavailable.of("database_unavailable", "The database is not reachable"))
          ).pipe(Effect.withTracerEnabled(false))
        )
    )
  })
)
