import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { ConfigProvider, Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { HttpServer } from "effect/http"
import { GatewayLive } from "../../src/app/Gateway.ts"
import type { AnyPlugin } from "../../src/plugins/Plugin.ts"
import * as TestDatabase from "./database.ts"
import { eventually } from "./fakeUpstream.ts"

/** A database of its own on the run's embedded PostgreSQL (not migrated: the gateway migrates it at start). */
export const createDatabase = (): Promise<string> => Effect.runPromise(TestDatabase.createDatabaseUrl)

export interface Response<T> {
  readonly status: number
  readonly headers: Headers
  readonly body: T
  readonly text: string
}

export interface RequestOptions {
  /** Sent as JSON. */
  readonly json?: unknown
  /** Sent as is, with `content-type: application/json` unless headers say otherwise. */
  readonly rawBody?: string
  readonly headers?: Record<string, string>
}

export interface RowCounts {
  readonly profiles: number
  readonly traits: number
  readonly memories: number
  readonly messages: number
}

export interface TestGateway {
  readonly baseUrl: string
  readonly databaseUrl: string
  /** `T` is what the test expects the body to be; nothing checks it but the test's assertions. */
  readonly request: <T = unknown>(method: string, path: string, options?: RequestOptions) => Promise<Response<T>>
  /** Runs SQL against the gateway's database, e.g. to check what was stored. */
  readonly query: <T = Record<string, unknown>>(
    text: string,
    params?: ReadonlyArray<unknown>
  ) => Promise<ReadonlyArray<T>>
  readonly counts: () => Promise<RowCounts>
  readonly close: () => Promise<void>
}

/**
 * The real gateway (every layer main.ts uses) on a loopback port with a fresh database.
 * `env` holds environment variables as the service would read them.
 */
export const startGateway = async (
  env: Record<string, string> = {},
  options: { readonly databaseUrl?: string; readonly plugins?: ReadonlyArray<AnyPlugin> } = {}
): Promise<TestGateway> => {
  const databaseUrl = options.databaseUrl ?? (await createDatabase())
  // The whole gateway (plugins included) reads this environment instead of the process's.
  const environment = ConfigProvider.layer(
    ConfigProvider.fromUnknown({
      LOG_LEVEL: "error",
      // The extraction worker only runs in the tests about it; elsewhere jobs just queue up.
      EXTRACTION_CONCURRENCY: "0",
      // Likewise the embedding model (the retrieval tests run it): elsewhere memories are ranked by keywords.
      EMBEDDINGS: "off",
      // A scripted failure reaches the client as scripted; the retries are test/routing.test.ts's.
      UPSTREAM_RETRIES: "0",
      ...env,
      DATABASE_URL: databaseUrl
    })
  )
  const server = NodeHttpServer.layerServer(createServer, { port: 0, host: "127.0.0.1" })
  const testSql = PgClient.layer({ url: Redacted.make(databaseUrl) })
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(
    Layer.buildWithScope(
      Layer.merge(GatewayLive(server, { plugins: options.plugins ?? [] }), testSql).pipe(Layer.provide(environment)),
      scope
    )
  )
  const address = Context.get(context, HttpServer.HttpServer).address
  if (address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  const baseUrl = `http://127.0.0.1:${address.port}`
  const sql = Context.get(context, PgClient.PgClient)

  const query = <T>(text: string, params: ReadonlyArray<unknown> = []) =>
    Effect.runPromise(sql.unsafe(text, params)) as Promise<ReadonlyArray<T>>

  return {
    baseUrl,
    databaseUrl,
    request: async <T>(method: string, path: string, options: RequestOptions = {}) => {
      const body = options.json !== undefined ? JSON.stringify(options.json) : options.rawBody
      const response = await fetch(baseUrl + path, {
        method,
        headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...options.headers },
        ...(body === undefined ? {} : { body })
      })
      const text = await response.text()
      const contentType = response.headers.get("content-type") ?? ""
      return {
        status: response.status,
        headers: response.headers,
        text,
        body: (contentType.startsWith("application/json") ? JSON.parse(text) : text) as T
      }
    },
    query,
    counts: async () => {
      const [row] = await query<RowCounts>(
        `SELECT (SELECT count(*) FROM profiles)::int AS profiles, (SELECT count(*) FROM traits)::int AS traits,
                (SELECT count(*) FROM memories)::int AS memories, (SELECT count(*) FROM messages)::int AS messages`
      )
      return row!
    },
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** The messages recorded for a user, oldest first, once a turn with an answer is there. */
export const recordedTurn = (gw: TestGateway, externalId: string) =>
  eventually(async () => {
    const rows = await gw.query<{ role: string; content: string }>(
      "SELECT m.role, m.content FROM messages m JOIN profiles p ON p.id = m.profile_id WHERE p.external_id = $1 ORDER BY m.created_at, m.id",
      [externalId]
    )
    return rows.some((row) => row.role === "assistant") ? rows : undefined
  })
