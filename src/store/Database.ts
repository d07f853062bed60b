import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted, String as Str } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
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

const clientLayer = (url: Redacted.Redacted<string>, maxConnections: number) =>
  PgClient.layer({ url, maxConnections, applicationName: "profile-memory-gateway", ...pgClientOptions })

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
  Effect.gen(function*() {
    const config = yield* AppConfig
    return Option.match(config.databaseUrl, {
      onSome: (url) => clientLayer(url, config.databasePoolMax),
      onNone: () =>
        Layer.unwrap(Effect.map(EmbeddedPostgres, (pg) => clientLayer(pg.url, config.databasePoolMax))).pipe(
          Layer.provide(EmbeddedPostgres.layer(config.dataDir))
        )
    })
  })
)
