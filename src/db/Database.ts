import { PgClient } from "@effect/sql-pg"
import { type Duration, Effect, Exit, Fiber, Layer, Option, type Redacted, Scope, String as Str } from "effect"
import { DatabaseConfig } from "./DatabaseConfig.ts"
import { EmbeddedPostgres } from "./EmbeddedPostgres.ts"
import { runMigrations } from "./migrations.ts"

/**
 * How the gateway's stores expect their `PgClient`: snake_case columns read as camelCase fields,
 * JSON values untouched. An application that provides its own client builds it with these.
 */
export const pgClientOptions = {
  transformResultNames: Str.snakeToCamel,
  transformQueryNames: Str.camelToSnake,
  // Trait values are user JSON: their keys must come back exactly as stored.
  transformJson: false
} as const

/** Longest the pool may take to close: queries stuck on a frozen database must not hold up shutdown. */
const CLOSE_TIMEOUT = "3 seconds"

/** A layer whose release gives up after `timeout` (what is still closing is left behind). */
const releasedWithin = <A, E, R>(layer: Layer.Layer<A, E, R>, timeout: Duration.Input) =>
  Layer.effectContext(
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      yield* Effect.addFinalizer(() =>
        Effect.forkDetach(Scope.close(scope, Exit.void)).pipe(
          Effect.flatMap((closing) => Fiber.await(closing).pipe(Effect.timeoutOption(timeout))),
          Effect.flatMap(
            Option.match({
              onSome: () => Effect.void,
              onNone: () => Effect.logWarning("database connections did not close in time; left behind")
            })
          )
        )
      )
      return yield* Layer.buildWithScope(layer, scope)
    })
  )

const clientLayer = (url: Redacted.Redacted<string>, maxConnections: number) =>
  releasedWithin(
    PgClient.layer({ url, maxConnections, applicationName: "profile-memory-gateway", ...pgClientOptions }),
    CLOSE_TIMEOUT
  )

/** Runs the migrations that have not run yet on the `SqlClient` in context. */
export const MigrationsLive = Layer.effectDiscard(
  runMigrations.pipe(
    Effect.tap((applied) =>
      applied.length > 0
        ? Effect.logInfo(`applied migrations: ${applied.map(([id, name]) => `${id}_${name}`).join(", ")}`)
        : Effect.void
    )
  )
)

/**
 * `PgClient`/`SqlClient` for the configured database: `DATABASE_URL` when set, otherwise an
 * embedded PostgreSQL under `DATA_DIR`.
 */
export const DatabaseClientLive = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* DatabaseConfig
    return Option.match(config.url, {
      onSome: (url) => clientLayer(url, config.poolMax),
      onNone: () =>
        Layer.unwrap(Effect.map(EmbeddedPostgres, (pg) => clientLayer(pg.url, config.poolMax))).pipe(
          Layer.provide(EmbeddedPostgres.layer(config.dataDir))
        )
    })
  })
)
