import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted, String as Str } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import { EmbeddedPostgres } from "./EmbeddedPostgres.ts"
import { runMigrations } from "./migrations.ts"

const clientLayer = (url: Redacted.Redacted<string>, maxConnections: number) =>
  PgClient.layer({
    url,
    maxConnections,
    applicationName: "profile-memory-gateway",
    transformResultNames: Str.snakeToCamel,
    transformQueryNames: Str.camelToSnake,
    // Trait values are user JSON: their keys must come back exactly as stored.
    transformJson: false
  })

/**
 * `PgClient`/`SqlClient` for the configured database, migrated before anything uses it:
 * `DATABASE_URL` when set, otherwise an embedded PostgreSQL under `DATA_DIR`.
 */
export const DatabaseLive = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const client = Option.match(config.databaseUrl, {
      onSome: (url) => clientLayer(url, config.databasePoolMax),
      onNone: () =>
        Layer.unwrap(Effect.map(EmbeddedPostgres, (pg) => clientLayer(pg.url, config.databasePoolMax))).pipe(
          Layer.provide(EmbeddedPostgres.layer(config.dataDir))
        )
    })
    const migrated = Layer.effectDiscard(
      runMigrations.pipe(
        Effect.tap((applied) =>
          applied.length > 0
            ? Effect.logInfo(`applied migrations: ${applied.map(([id, name]) => `${id}_${name}`).join(", ")}`)
            : Effect.void
        )
      )
    )
    return migrated.pipe(Layer.provideMerge(client))
  })
)
