import { Effect, Layer } from "effect"
import { DatabaseClientLive, MigrationsLive } from "../../db/Database.ts"
import { DatabaseConfig, databaseFromEnv } from "../../db/DatabaseConfig.ts"
import { StartupLoggingLive } from "../../observability/Logging.ts"
import { AlreadyReported } from "../CliFailure.ts"

/** `migrate`'s work: loaded by the command when it runs, as the database's modules are heavy. */
export const migrateDatabase = Effect.gen(function* () {
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
