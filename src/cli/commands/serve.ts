import { Effect, Layer } from "effect"
import { Command } from "effect/cli"
import { serve } from "../../app/serve.ts"
import { DatabaseClientLive, MigrationsLive } from "../../db/Database.ts"
import { DatabaseConfig, databaseFromEnv } from "../../db/DatabaseConfig.ts"
import { StartupLoggingLive } from "../../observability/Logging.ts"
import { AlreadyReported } from "../CliFailure.ts"

export const start = Command.make("start", {}, () => serve.pipe(Effect.mapError(() => new AlreadyReported()))).pipe(
  Command.withDescription(
    "Run the gateway (configured by the environment: docs/configuration.md); SIGTERM or SIGINT drain it and stop"
  )
)

export const migrate = Command.make("migrate", {}, () =>
  Effect.gen(function* () {
    const database = yield* databaseFromEnv
    // Building the layers runs the migrations; closing the scope stops an embedded PostgreSQL again.
    yield* Effect.scoped(
      Layer.build(
        MigrationsLive.pipe(Layer.provide(DatabaseClientLive), Layer.provide(Layer.succeed(DatabaseConfig, database)))
      )
    )
    yield* Effect.logInfo("the database schema is up to date")
  }).pipe(
    // Logged in the configured format, as a failed start is.
    Effect.tapCause((cause) => Effect.logError(cause)),
    Effect.mapError(() => new AlreadyReported()),
    Effect.provide(StartupLoggingLive)
  )
).pipe(
  Command.withDescription(
    "Apply the database migrations and exit (DATABASE_URL, else the embedded PostgreSQL); `start` runs them too"
  )
)
