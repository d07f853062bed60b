/** The benchmarks' PostgreSQL: one embedded server per run, in a temporary directory, a database per arm. */
import { chmod, mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { EmbeddedPostgres } from "../src/db/EmbeddedPostgres.ts"

export const startBenchDatabase = async (label: string) => {
  const scope = Effect.runSync(Scope.make())
  const dataDir = await mkdtemp(join(tmpdir(), `gateway-${label}-`))
  await chmod(dataDir, 0o755)
  const pg = await Effect.runPromise(Layer.buildWithScope(EmbeddedPostgres.layer(dataDir), scope))
  /** The superuser's URL of the server's `postgres` database. */
  const url = Redacted.value(Context.get(pg, EmbeddedPostgres).url)
  /** Runs SQL on a database of the server (the `postgres` one unless told). */
  const run = <A, E>(effect: Effect.Effect<A, E, PgClient.PgClient>, databaseUrl = url) =>
    Effect.runPromise(effect.pipe(Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl) }))))
  return {
    url,
    /** A directory that goes with the server: scratch space for the run. */
    dataDir,
    run,
    /** A new, empty database; its URL. */
    createDatabase: async (name: string) => {
      await run(Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe(`CREATE DATABASE ${name}`)))
      const database = new URL(url)
      database.pathname = `/${name}`
      return database.toString()
    },
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await rm(dataDir, { recursive: true, force: true })
    }
  }
}
