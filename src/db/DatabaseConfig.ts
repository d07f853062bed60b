import * as path from "node:path"
import { Config, Context } from "effect"
import { flag, intBetween, nonNegativeInt, optionalSecret, positiveInt, section } from "../config/values.ts"

/** The database, its deadline on the request path, the turn writer and the context cache. */
export const databaseFromEnv = section({
  /** `None` starts the embedded PostgreSQL under `dataDir`. */
  url: optionalSecret("DATABASE_URL"),
  dataDir: Config.String("DATA_DIR").pipe(
    Config.withDefault("./data"),
    Config.map((dir) => path.resolve(dir))
  ),
  poolMax: positiveInt("DATABASE_POOL_MAX", 10),
  /**
   * Deadline of every database step on the request path. Past it (or with the database down) a
   * request goes to the provider without injected context, unless `failOpen` is false.
   */
  requestTimeoutMs: positiveInt("DATABASE_REQUEST_TIMEOUT_MS", 1000),
  /** `FAIL_OPEN=false`: answer 503 instead of forwarding without memory when the database is unavailable. */
  failOpen: flag("FAIL_OPEN", true),
  /** Answered turns kept in memory while the database cannot take them; beyond this they are dropped (and counted). */
  recordBufferTurns: positiveInt("RECORD_BUFFER_TURNS", 10_000),
  /**
   * How long a finished turn may wait to be written with others in one statement (0: at once; turns
   * that arrive while a write is in flight still share the next one).
   */
  recordBatchMs: intBetween("RECORD_BATCH_MS", { minimum: 0, maximum: 1000 }, 0),
  /**
   * A turn's commit waits for its WAL flush to disk, as PostgreSQL does by default. Off by default:
   * the turn is committed (visible, and safe from any crash of the gateway) without the wait (its
   * cost: `npm run bench`, arm D); a crash of the database server itself, or of its machine, can
   * lose what it committed in its last 600 ms (3 × `wal_writer_delay`).
   */
  recordSynchronousCommit: flag("RECORD_SYNCHRONOUS_COMMIT", false),
  contextCache: section({
    /** Profiles kept in memory (0: no cache). */
    size: nonNegativeInt("CONTEXT_CACHE_SIZE", 1000),
    ttlMs: positiveInt("CONTEXT_CACHE_TTL_MS", 60_000),
    /**
     * Longest a replica uses its cache without proof that it has heard every change committed
     * before; a profile's DELETE answers only after this long, so no replica serves it after (0: off).
     */
    fenceMs: nonNegativeInt("CONTEXT_CACHE_FENCE_MS", 500)
  })
})

export type DatabaseSettings = Config.Success<typeof databaseFromEnv>

export class DatabaseConfig extends Context.Service<DatabaseConfig, DatabaseSettings>()("gateway/db/DatabaseConfig") {}
