import { randomBytes } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { inject } from "vitest"
import { MigrationsLive, pgClientOptions } from "../../src/db/Database.ts"

/**
 * A database of its own on the run's embedded PostgreSQL (see `globalSetup.ts`), created when the
 * layer is built; its URL.
 */
export const createDatabaseUrl = Effect.gen(function* () {
  const adminUrl = inject("pgAdminUrl")
  const name = `test_${randomBytes(6).toString("hex")}`
  yield* PgClient.PgClient.use((sql) => sql.unsafe(`CREATE DATABASE ${name}`)).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(adminUrl) }))
  )
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}).pipe(Effect.orDie)

/**
 * `PgClient`/`SqlClient` on a fresh, migrated database, built the way the gateway builds its own
 * (`pgClientOptions`). Each build is a new database: a test file that needs one builds it once
 * (`layer(...)` of @effect/vitest shares it among the file's tests).
 */
export const layer = MigrationsLive.pipe(
  Layer.provideMerge(
    Layer.unwrap(
      Effect.map(createDatabaseUrl, (url) => PgClient.layer({ url: Redacted.make(url), ...pgClientOptions }))
    )
  ),
  Layer.orDie
)
