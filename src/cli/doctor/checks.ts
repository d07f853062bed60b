import { existsSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Cause, Config, Duration, Effect, Layer, Option, Predicate, Redacted, Result, Schema } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import type { AppConfigShape } from "../../app/AppConfig.ts"
import { displayUrl, withDisplayUrls } from "../../config/displayUrl.ts"
import { pgClientOptions } from "../../db/Database.ts"
import { clusterDirOf, clusterHolder } from "../../db/EmbeddedPostgres.ts"
import { migrations } from "../../db/migrations.ts"
import { Embedder } from "../../embedding/Embedder.ts"
import { EmbeddingConfig } from "../../embedding/EmbeddingConfig.ts"
import type { ProviderName } from "../../providers/ProviderName.ts"
import { providerOf } from "../../providers/providers.ts"
import { parseRoutesFile, type RouteTarget } from "../../routing/RoutesFile.ts"
import { UpstreamConfig } from "../../upstream/UpstreamConfig.ts"

/** One finding of `doctor`: what was checked, how it went, and what to do about it. */
export interface Check {
  readonly name: string
  readonly status: "ok" | "warn" | "fail"
  readonly detail: string
}

const check = (name: string, status: Check["status"], detail: string): Check => ({ name, status, detail })

/** Longest one network check may take. */
const CHECK_TIMEOUT = Duration.seconds(10)

/**
 * An error's text for the report, with its causes ("Transport error (GET …): fetch failed: getaddrinfo
 * ENOTFOUND api.openai.com"), its URLs without credentials or query.
 */
const errorText = (error: unknown) => {
  const messages: Array<string> = []
  let current: unknown = error
  while (messages.length < 4 && current !== undefined && current !== null) {
    const message = current instanceof Error ? current.message : String(current)
    if (message !== "" && !messages.includes(message)) messages.push(message)
    current = Predicate.hasProperty(current, "cause") ? current.cause : undefined
  }
  return withDisplayUrls(messages.join(": "))
}

/**
 * The embedded PostgreSQL's cluster: initialised or not, and who holds it. Held by a server whose
 * gateway is alive, it is fine when a gateway answers at `--url` (that one, as a rule: the gateway
 * runs, and only a second `start` here would fail); otherwise that process is what would stop a start.
 */
const embeddedDatabase = (dataDir: string, gateway: Check) =>
  Effect.gen(function* () {
    const clusterDir = clusterDirOf(dataDir)
    if (!existsSync(join(clusterDir, "PG_VERSION")))
      return check("database", "ok", `embedded PostgreSQL: created in ${clusterDir} at the first start`)
    const holder = yield* clusterHolder(clusterDir)
    switch (holder._tag) {
      case "Free":
        return check("database", "ok", `embedded PostgreSQL data in ${clusterDir} (not running)`)
      case "Orphaned":
        return check(
          "database",
          "ok",
          `embedded PostgreSQL in ${clusterDir} is held by an orphaned server (pid ${holder.pid}): \`start\` stops it first`
        )
      case "InUse":
        return gateway.status === "ok"
          ? check(
              "database",
              "ok",
              `embedded PostgreSQL in ${clusterDir} serves a running gateway (process ${holder.parent})`
            )
          : check(
              "database",
              "fail",
              `embedded PostgreSQL in ${clusterDir} is in use by process ${holder.parent}, and no gateway answers at ` +
                `--url: stop that process (\`kill ${holder.parent}\`) or set DATA_DIR to another directory`
            )
    }
  }).pipe(Effect.catch((error) => Effect.succeed(check("database", "fail", error.message))))

const Versions = Schema.Array(Schema.Struct({ version: Schema.String, trgm: Schema.Boolean }))
const Applied = Schema.Array(Schema.Struct({ latest: Schema.NullOr(Schema.Int) }))

/** A database at `DATABASE_URL`: reachable, its version, the extension the schema needs, migrations applied. */
const externalDatabase = (url: Redacted.Redacted<string>) =>
  Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const [server] = yield* sql`
      SELECT current_setting('server_version') AS version,
             EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') AS trgm`.pipe(
      Effect.flatMap(Schema.decodeUnknownEffect(Versions))
    )
    if (server === undefined || !server.trgm)
      return check("database", "fail", "reachable, but the pg_trgm extension is not available (the schema needs it)")
    const known = (yield* migrations).length
    const applied = yield* sql`SELECT max(migration_id) AS latest FROM effect_sql_migrations`.pipe(
      Effect.flatMap(Schema.decodeUnknownEffect(Applied)),
      Effect.map((rows) => rows[0]?.latest ?? 0),
      Effect.orElseSucceed(() => 0)
    )
    const schema =
      applied >= known
        ? "schema up to date"
        : `${known - applied} migrations to apply (\`start\` or \`migrate\` applies them)`
    return check("database", "ok", `PostgreSQL ${server.version}, ${schema}`)
  }).pipe(
    Effect.provide(PgClient.layer({ url, maxConnections: 1, ...pgClientOptions })),
    Effect.scoped,
    Effect.timeout(CHECK_TIMEOUT),
    Effect.catchCause((cause) =>
      Effect.succeed(check("database", "fail", `cannot use DATABASE_URL: ${errorText(Cause.squash(cause))}`))
    )
  )

/** The database `start` would use; `gateway` is what the running-gateway check found. */
export const database = (config: AppConfigShape, gateway: Check) =>
  Option.match(config.database.url, {
    onNone: () => embeddedDatabase(config.database.dataDir, gateway),
    onSome: externalDatabase
  })

const ModelList = Schema.Struct({ data: Schema.Array(Schema.Struct({ id: Schema.String })) })

/** `GET {baseUrl}/models` as the provider's API wants it, with the configured key. */
const listModels = (provider: ProviderName, baseUrl: string, apiKey: Option.Option<Redacted.Redacted<string>>) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const key = Option.map(apiKey, Redacted.value)
    let request = HttpClientRequest.get(`${baseUrl.replace(/\/+$/, "")}/models`)
    // The headers the gateway itself sends it (`Provider.authHeaders`).
    if (Option.isSome(key))
      request = HttpClientRequest.setHeaders(request, providerOf(provider).authHeaders(key.value, {}))
    const response = yield* client.execute(request)
    const models = response.status === 200 ? yield* Effect.option(response.json) : Option.none()
    return {
      status: response.status,
      ids: Option.match(Option.flatMap(models, Schema.decodeUnknownOption(ModelList)), {
        onNone: () => undefined,
        onSome: (list) => list.data.map((model) => model.id)
      })
    }
  }).pipe(Effect.timeout(CHECK_TIMEOUT))

/** Whether a provider's list of models has `model`, as itself or dated (`claude-haiku-4-5` as `claude-haiku-4-5-20251001`). */
const lists = (ids: ReadonlyArray<string>, model: string) =>
  ids.some((id) => id === model || id.startsWith(`${model}-`))

/**
 * A provider at a base URL, probed as the gateway would call it: `GET /models` with the key (if any)
 * answers, refuses the key (`FAIL`; `warn` without a key), answers something else (`warn`), or cannot be
 * reached (`FAIL`). With `model`: a list without it is a `warn`. `keyNote` says whose key it was.
 */
const providerCheck = (
  name: string,
  provider: ProviderName,
  baseUrl: string,
  apiKey: Option.Option<Redacted.Redacted<string>>,
  keyNote: string,
  model?: string
) => {
  const at = displayUrl(baseUrl)
  return listModels(provider, baseUrl, apiKey).pipe(
    Effect.map(({ ids, status }) =>
      status === 200
        ? model !== undefined && ids !== undefined && !lists(ids, model)
          ? check(name, "warn", `${provider} at ${at} answers${keyNote}, but does not list ${model}`)
          : check(name, "ok", `${provider} at ${at} answers${keyNote}`)
        : status === 401 || status === 403
          ? check(
              name,
              Option.isNone(apiKey) ? "warn" : "fail",
              `${provider} at ${at} refused the key (${status})${keyNote}`
            )
          : check(name, "warn", `${provider} at ${at} answered ${status} to GET /models`)
    ),
    Effect.catch((error) =>
      Effect.succeed(check(name, "fail", `${provider} at ${at} is unreachable: ${errorText(error)}`))
    )
  )
}

/** The provider requests go to: reachable at its base URL, and the key accepted. */
export const upstream = (config: AppConfigShape) => {
  const provider = config.upstream.provider
  const endpoint = config.upstream[provider]
  const keyNote = Option.isNone(endpoint.apiKey) ? " (no key configured: clients send their own)" : ""
  return providerCheck("upstream", provider, endpoint.baseUrl, endpoint.apiKey, keyNote)
}

/**
 * One target of a route: its key (`apiKeyEnv`, a held key's `keyId`, else the key its provider is called with anyway) and its
 * endpoint probed with it as the provider check does. A variable `apiKeyEnv` names that is not set stops
 * the gateway's start (`FAIL`, with its line); a target without any key serves only requests that bring
 * one (`warn`).
 */
const routeTarget = (config: AppConfigShape, name: string, target: RouteTarget, keyLine: number) =>
  Effect.gen(function* () {
    const configured = config.upstream[target.provider]
    const baseUrl = (target.baseUrl ?? configured.baseUrl).replace(/\/+$/, "")
    // A held key's provider key is in the database, sealed: the gateway opens it per request.
    if (target.keyId !== undefined)
      return check(
        name,
        "ok",
        `${target.provider} at ${displayUrl(baseUrl)} with the provider key held key ${target.keyId} is bound to ` +
          "(not probed here: the gateway passes the target by while that key is revoked)"
      )
    if (target.apiKeyEnv !== undefined) {
      // Read as the gateway reads it (an empty variable is not set).
      const own = yield* Config.Redacted(target.apiKeyEnv).pipe(
        Config.option,
        Effect.orElseSucceed(() => Option.none<Redacted.Redacted<string>>())
      )
      if (Option.isNone(own))
        return check(
          name,
          "fail",
          `line ${keyLine}: ${target.apiKeyEnv} (its apiKeyEnv) is not set: the gateway does not start with this file`
        )
      return yield* providerCheck(name, target.provider, baseUrl, own, ` (key from ${target.apiKeyEnv})`, target.model)
    }
    if (Option.isSome(configured.apiKey))
      return yield* providerCheck(
        name,
        target.provider,
        baseUrl,
        configured.apiKey,
        ` (the configured ${target.provider} key)`,
        target.model
      )
    const found = yield* providerCheck(
      name,
      target.provider,
      baseUrl,
      configured.apiKey,
      ` (no ${target.provider} key configured and no apiKeyEnv: only requests that bring a key use this target)`,
      target.model
    )
    return found.status === "ok" ? { ...found, status: "warn" as const } : found
  })

/**
 * `ROUTES_FILE`, when set: read and checked as the gateway reads it (what is wrong, on which line), then
 * each target of each route (`route <model>: <provider>/<model>`): its key and its endpoint.
 */
export const routes = (config: AppConfigShape) =>
  Effect.gen(function* () {
    const file = Option.getOrUndefined(config.routing.routesFile)
    if (file === undefined) return []
    const text = yield* Effect.tryPromise(() => readFile(file, "utf8")).pipe(Effect.result)
    if (Result.isFailure(text))
      return [check("routes", "fail", `cannot read ROUTES_FILE ${file}: ${errorText(text.failure.cause)}`)]
    const parsed = parseRoutesFile(text.success)
    if (Result.isFailure(parsed)) return [check("routes", "fail", `ROUTES_FILE ${file}: ${parsed.failure}`)]
    const { document, lineAt } = parsed.success
    const names = document.routes.map(
      (route) => `${route.model} (${route.targets.length} target${route.targets.length === 1 ? "" : "s"})`
    )
    const summary = check(
      "routes",
      "ok",
      names.length === 0 ? `${file} routes no model` : `${file}: ${names.join(", ")}`
    )
    const targets = document.routes.flatMap((route, routeIndex) => {
      const seen = new Map<string, number>()
      return route.targets.map((target, index) => {
        const label = `route ${route.model}: ${target.provider}/${target.model}`
        const repeat = (seen.get(label) ?? 0) + 1
        seen.set(label, repeat)
        return routeTarget(
          config,
          repeat === 1 ? label : `${label} #${repeat}`,
          target,
          lineAt(["routes", routeIndex, "targets", index, "apiKeyEnv"])
        )
      })
    })
    return [summary, ...(yield* Effect.all(targets, { concurrency: "unbounded" }))]
  })

/** The extraction model: its endpoint answers and lists the model (when it lists models at all). */
export const extractionModel = (config: AppConfigShape) => {
  const { apiKey, baseUrl, concurrency, model } = config.extraction
  if (concurrency === 0)
    return Effect.succeed(check("extraction", "ok", "off on this replica (EXTRACTION_CONCURRENCY=0)"))
  // As the gateway does: without a key, turns are recorded and their jobs wait in the queue.
  if (Option.isNone(apiKey))
    return Effect.succeed(
      check(
        "extraction",
        "warn",
        "no EXTRACTION_API_KEY or UPSTREAM_API_KEY: nothing is learned, jobs wait in the queue"
      )
    )
  const at = displayUrl(baseUrl)
  const provider = baseUrl === config.upstream.anthropic.baseUrl ? "anthropic" : "openai"
  return listModels(provider, baseUrl, apiKey).pipe(
    Effect.map(({ ids, status }) =>
      status !== 200
        ? check("extraction", "fail", `${at} answered ${status} to GET /models: extraction will fail`)
        : ids === undefined || ids.includes(model)
          ? check("extraction", "ok", `${model} at ${at}`)
          : check("extraction", "warn", `${at} does not list ${model} (EXTRACTION_MODEL)`)
    ),
    Effect.catch((error) => Effect.succeed(check("extraction", "fail", `${at} is unreachable: ${errorText(error)}`)))
  )
}

/** The embedding model: loaded (local) or called (provider), with one text embedded. */
export const embeddings = (config: AppConfigShape) => {
  if (config.embeddings.mode === "off")
    return Effect.succeed(check("embeddings", "warn", "off (EMBEDDINGS=off): memories are ranked by keywords only"))
  return Effect.gen(function* () {
    const embedder = yield* Embedder
    const started = Date.now()
    yield* embedder.documents(["The user prefers a window seat."])
    return check("embeddings", "ok", `${embedder.model} embeds (${Date.now() - started} ms for one text)`)
  }).pipe(
    Effect.provide(
      Embedder.layer.pipe(
        Layer.provide([
          Layer.succeed(EmbeddingConfig, config.embeddings),
          Layer.succeed(UpstreamConfig, config.upstream)
        ])
      )
    ),
    Effect.scoped,
    Effect.timeout(Duration.seconds(60)),
    Effect.catchCause((cause) =>
      Effect.succeed(
        check(
          "embeddings",
          "fail",
          `the ${config.embeddings.mode} model does not embed: ${errorText(Cause.squash(cause))}`
        )
      )
    )
  )
}

/** A gateway running at `url`: ready, not ready (and why), or not there. */
export const runningGateway = (url: string) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.get(`${url.replace(/\/+$/, "")}/ready`)
    return response.status === 200
      ? check("gateway", "ok", `ready at ${displayUrl(url)}`)
      : check("gateway", "fail", `${displayUrl(url)} answered ${response.status} to /ready: ${yield* response.text}`)
  }).pipe(
    Effect.timeout(CHECK_TIMEOUT),
    Effect.catch(() => Effect.succeed(check("gateway", "warn", `none running at ${displayUrl(url)}`)))
  )
