import * as path from "node:path"
import { Config, Context, Effect, Layer, type LogLevel, Option, Redacted, Result, Schema } from "effect"
import { IpNetwork } from "effect/net"

export const UpstreamProvider = Schema.Literals(["openai", "anthropic"])
export type UpstreamProvider = typeof UpstreamProvider.Type

/** One configured upstream: where it is and the key used when a request brings none. */
export interface UpstreamEndpoint {
  readonly baseUrl: string
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
}

export const RankingMode = Schema.Literals(["learned", "cosine"])
export type RankingMode = typeof RankingMode.Type

export const EmbeddingsMode = Schema.Literals(["local", "provider", "off"])
export type EmbeddingsMode = typeof EmbeddingsMode.Type

export interface EmbeddingSettings {
  /** `local`: the model shipped in node_modules; `provider`: an OpenAI-compatible `/embeddings`; `off`: keywords only. */
  readonly mode: EmbeddingsMode
  /** The provider's base URL and model (mode `provider`). */
  readonly baseUrl: string
  readonly model: string
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  /** Longest a request waits for its query vector before ranking by keywords alone. */
  readonly queryTimeoutMs: number
  /** Worker threads running the local model. */
  readonly threads: number
  /** Loops per process taking `embed` jobs (0: this replica embeds nothing in the background). */
  readonly concurrency: number
  /** Memories embedded per model call in the background. */
  readonly batchSize: number
  /** Recent query vectors kept in memory. */
  readonly queryCacheSize: number
}

export interface RateLimitSettings {
  /** Requests per minute per user id on `/v1`. */
  readonly userPerMinute: number
  /** Requests per minute per app key on `/v1`. */
  readonly keyPerMinute: number
  /** Requests per minute per client address on `/api`. */
  readonly apiClientPerMinute: number
  /** Wrong keys per minute per client address; past them the client gets 429 without a key check. */
  readonly authFailuresPerMinute: number
  /** Replicas behind the balancer: each enforces 1/N of every limit (the buckets live in each process). */
  readonly replicas: number
}

/**
 * Everything the service reads from its environment, parsed once at start.
 * A bad value fails the start with a message naming the variable.
 */
export interface AppConfigShape {
  readonly port: number
  readonly host: string
  /** `None` starts the embedded PostgreSQL under `dataDir`. */
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
  readonly databasePoolMax: number
  /**
   * Deadline of every database step on the request path. Past it (or with the database down) a
   * request goes to the provider without injected context, unless `failOpen` is false.
   */
  readonly databaseRequestTimeoutMs: number
  /** `FAIL_OPEN=false`: answer 503 instead of forwarding without memory when the database is unavailable. */
  readonly failOpen: boolean
  /** Answered turns kept in memory while the database cannot take them; beyond this they are dropped (and counted). */
  readonly recordBufferTurns: number
  /**
   * App keys (`SERVICE_API_KEY`, comma-separated so a new key can be rolled out before the old one
   * is removed): they admit `/v1`, and everything else too while no admin key is set. None: `/v1` is open.
   */
  readonly serviceApiKeys: ReadonlyArray<Redacted.Redacted<string>>
  /** Admin keys (`ADMIN_API_KEY`, a list too): once set, the only keys `/api` and `/metrics` accept. */
  readonly adminApiKeys: ReadonlyArray<Redacted.Redacted<string>>
  /** Reverse proxies whose `X-Forwarded-For` names the client (none: the TCP peer is the client). */
  readonly trustedProxies: ReadonlyArray<IpNetwork.IpNetwork>
  /** Browser origins allowed to call `/v1` and `/api` (`CORS_ORIGINS`; `*` for every origin). None: CORS is off. */
  readonly corsOrigins: ReadonlyArray<string>
  /** The gateway's own request limits (token buckets, per replica; 0 switches one off). */
  readonly rateLimits: RateLimitSettings
  readonly upstream: {
    /** The provider a request goes to unless it names another with `X-Upstream-Provider`. */
    readonly provider: UpstreamProvider
    readonly openai: UpstreamEndpoint
    readonly anthropic: UpstreamEndpoint
    readonly connectTimeoutMs: number
    /** Until the response headers (non-streaming: the whole answer) arrive. */
    readonly firstByteTimeoutMs: number
    /** Longest silence between two chunks of a streamed answer. */
    readonly idleTimeoutMs: number
  }
  readonly extraction: {
    readonly model: string
    readonly baseUrl: string
    readonly apiKey: Option.Option<Redacted.Redacted<string>>
    /** Worker loops per process; 0 leaves jobs queued for other replicas. */
    readonly concurrency: number
    readonly maxAttempts: number
    readonly retryBaseMs: number
    readonly retryMaxMs: number
    /** How long a claimed job stays claimed without a heartbeat before another worker may take it. */
    readonly leaseMs: number
    /** The safety-net poll; notifications wake the workers at once. */
    readonly pollMs: number
    readonly timeoutMs: number
    readonly shutdownGraceMs: number
    /** An extracted value replaces an extracted one if its confidence is at least the stored one minus this. */
    readonly confidenceMargin: number
    /** ...or if the stored extracted value is older than this. */
    readonly traitMaxAgeDays: number
    /** Trigram similarity from which a new memory counts as a repeat of an existing one. */
    readonly dedupeSimilarity: number
    readonly summaryEveryChanges: number
    readonly summaryMaxAgeHours: number
    readonly maxIngestCharacters: number
    /** Characters of turn text one extraction call may send to the model (the newest are kept). */
    readonly maxInputCharacters: number
    /** Extraction jobs (turn, ingest, summary, cues) one profile may start per hour; more wait in the queue (0: no limit). */
    readonly profileJobsPerHour: number
    /** Memories written through the API or MCP without cues get them from the extraction model. */
    readonly writeCues: boolean
  }
  /** Half-life of a memory's decay factor, by memory type, in days. */
  readonly memoryHalfLifeDays: {
    readonly fact: number
    readonly preference: number
    readonly event: number
    readonly context: number
  }
  readonly injection: {
    /** Budget of the injected block, in estimated tokens (4 characters each). */
    readonly maxTokens: number
    readonly maxMemories: number
  }
  /** How memories are ranked for a message (the fitted model of `retrieval/rankingModel.ts`). */
  readonly ranking: {
    /** `learned`: the fitted model; `cosine`: the query's cosine similarity alone (a reference point for benchmarks). */
    readonly mode: RankingMode
    readonly recencyHalfLifeDays: number
    /** The probability a memory needs to be injected; none: the fitted model's own floor. */
    readonly relevanceFloor: Option.Option<number>
  }
  readonly embeddings: EmbeddingSettings
  readonly contextCache: {
    /** Profiles kept in memory (0: no cache). */
    readonly size: number
    readonly ttlMs: number
    /**
     * Longest a replica uses its cache without proof that it has heard every change committed
     * before; a profile's DELETE answers only after this long, so no replica serves it after (0: off).
     */
    readonly fenceMs: number
  }
  /**
   * How long a finished turn may wait to be written with others in one statement (0: at once; turns
   * that arrive while a write is in flight still share the next one).
   */
  readonly recordBatchMs: number
  /**
   * A turn's commit waits for its WAL flush, as PostgreSQL does by default (`false`: it does not; the
   * turn is still committed and safe from a gateway crash, but a crash of the database server could
   * lose the last few hundred milliseconds).
   */
  readonly recordSynchronousCommit: boolean
  readonly plugins: {
    /** `PLUGINS`: module paths or package names, in the order their hooks run. */
    readonly specifiers: ReadonlyArray<string>
    /** Budget of one hook call on the request path. */
    readonly timeoutMs: number
    /** Budget of one hook call in the background (after the response, in the extraction worker). */
    readonly backgroundTimeoutMs: number
  }
  readonly traitsFile: Option.Option<string>
  /** How long shutdown waits for requests in flight; a stream still running 1 s before the end is ended with an SSE error. */
  readonly shutdownDrainMs: number
  readonly apiMaxBodyBytes: number
  readonly proxyMaxBodyBytes: number
  readonly maxMessages: number
  /** Deepest nesting of arrays and objects accepted in a JSON body. */
  readonly maxJsonDepth: number
  readonly logLevel: LogLevel.LogLevel
  readonly logFormat: "pretty" | "json"
  /** Span export over OTLP/HTTP, from OpenTelemetry's own variables; `None`: no span leaves the process. */
  readonly tracing: Option.Option<TracingSettings>
}

export const OtlpProtocol = Schema.Literals(["http/protobuf", "http/json"])
export type OtlpProtocol = typeof OtlpProtocol.Type

/** Where and how spans are exported (`OTEL_*`, as every OpenTelemetry SDK reads them). */
export interface TracingSettings {
  /** `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is, or `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`. */
  readonly url: string
  /** `OTEL_EXPORTER_OTLP_HEADERS`, overridden per name by `OTEL_EXPORTER_OTLP_TRACES_HEADERS`: often a vendor's key. */
  readonly headers: Redacted.Redacted<Readonly<Record<string, string>>>
  readonly protocol: OtlpProtocol
  readonly compression: "gzip" | "none"
  /** `OTEL_SERVICE_NAME`, else `service.name` in `OTEL_RESOURCE_ATTRIBUTES`, else `profile-memory-gateway`. */
  readonly serviceName: string
  /** `OTEL_RESOURCE_ATTRIBUTES` (`deployment.environment=prod,...`), on every exported span. */
  readonly resourceAttributes: Readonly<Record<string, string>>
  /** `OTEL_BSP_SCHEDULE_DELAY`: how long finished spans wait to be sent together. */
  readonly scheduleDelayMs: number
}

const logLevels = {
  all: "All",
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  error: "Error",
  fatal: "Fatal",
  none: "None"
} as const satisfies Record<string, LogLevel.LogLevel>

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

const HttpUrl = Schema.String.check(
  Schema.makeFilter((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), {
    expected: "an http:// or https:// URL"
  })
)

/** An unset or empty variable is `None`: compose files often pass `VAR=` for "not set". */
const optionalString = (name: string) =>
  Config.option(Config.String(name)).pipe(Config.map(Option.filter((value) => value.trim() !== "")))

const optionalSecret = (name: string) =>
  optionalString(name).pipe(Config.map(Option.map((value) => Redacted.make(value.trim()))))

/** A comma-separated list of secrets (blank items ignored), e.g. keys during a rotation. */
const secretList = (name: string) =>
  optionalString(name).pipe(
    Config.map(
      Option.match({
        onNone: (): ReadonlyArray<Redacted.Redacted<string>> => [],
        onSome: (list) =>
          list
            .split(",")
            .map((item) => item.trim())
            .filter((item) => item !== "")
            .map((item) => Redacted.make(item))
      })
    )
  )

/** An address (`10.0.0.7`) or a network in CIDR notation (`10.0.0.0/8`, `fd00::/8`). */
const parseNetwork = (entry: string) =>
  IpNetwork.fromString(entry.includes("/") ? entry : `${entry}/${entry.includes(":") ? 128 : 32}`)

const NetworkList = Schema.String.check(
  Schema.makeFilter(
    (s) => s.split(",").every((entry) => entry.trim() === "" || Result.isSuccess(parseNetwork(entry.trim()))),
    {
      expected: "a comma-separated list of IP addresses or CIDR networks"
    }
  )
)

const networkList = (name: string) =>
  Config.schema(NetworkList, name).pipe(
    Config.withDefault(""),
    Config.map((list) =>
      list
        .split(",")
        .map((entry) => entry.trim())
        .filter((entry) => entry !== "")
        .flatMap((entry) => {
          const parsed = parseNetwork(entry)
          return Result.isSuccess(parsed) ? [parsed.success] : []
        })
    )
  )

/** A browser origin as the `Origin` header sends it: scheme, host and port, no path; or `*`. */
const isOrigin = (entry: string) => {
  if (entry === "*") return true
  if (!URL.canParse(entry)) return false
  const parsed = new URL(entry)
  return (parsed.protocol === "http:" || parsed.protocol === "https:") && parsed.origin === entry
}

const OriginList = Schema.String.check(
  Schema.makeFilter((s) => s.split(",").every((entry) => entry.trim() === "" || isOrigin(entry.trim())), {
    expected: "a comma-separated list of origins such as https://app.example.com (scheme, host, port; no path), or *"
  })
)

const originList = (name: string) =>
  Config.schema(OriginList, name).pipe(
    Config.withDefault(""),
    Config.map((list) =>
      list
        .split(",")
        .map((entry) => entry.trim())
        .filter((entry) => entry !== "")
    )
  )

const nonNegativeInt = (name: string, fallback: number) =>
  Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), name).pipe(Config.withDefault(fallback))

const url = (name: string) => Config.schema(HttpUrl, name).pipe(Config.map((u) => u.replace(/\/+$/, "")))

const positiveInt = (name: string, fallback: number) =>
  Config.schema(PositiveInt, name).pipe(Config.withDefault(fallback))

const weight = (name: string, fallback: number) =>
  Config.schema(Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0)), name).pipe(Config.withDefault(fallback))

const halfLife = (name: string, fallback: number) =>
  Config.schema(Schema.Finite.check(Schema.isGreaterThan(0)), name).pipe(Config.withDefault(fallback))

/** Variables of the hand-weighted ranking that the fitted model replaced: set, they stop the start with this word. */
const RETIRED_RANKING_VARIABLES = [
  "MEMORY_RANK_SEMANTIC_WEIGHT",
  "MEMORY_RANK_KEYWORD_WEIGHT",
  "MEMORY_RANK_IMPORTANCE_WEIGHT",
  "MEMORY_RANK_RECENCY_WEIGHT",
  "MEMORY_RANK_TIME_WEIGHT",
  "MEMORY_RANK_RELEVANCE_WEIGHT",
  "EMBEDDING_SIMILARITY_FLOOR",
  "EMBEDDING_SIMILARITY_FULL"
] as const

const retired = (name: string) =>
  Config.option(
    Config.schema(
      Schema.String.check(
        Schema.makeFilter(() => false, {
          expected:
            "unset (ranking is now a fitted model: see docs/retrieval.md; MEMORY_RELEVANCE_FLOOR is a probability)"
        })
      ),
      name
    )
  )

/** The query budget by mode: a thread on this machine answers in milliseconds, a provider over HTTP in tens. */
const QUERY_TIMEOUT_DEFAULTS = { local: 100, provider: 500, off: 0 } as const

const embeddingSettings = (
  c: {
    readonly mode: EmbeddingsMode
    readonly baseUrl: Option.Option<string>
    readonly model: string
    readonly apiKey: Option.Option<Redacted.Redacted<string>>
    readonly queryTimeoutMs: Option.Option<number>
    readonly threads: number
    readonly concurrency: number
    readonly batchSize: number
    readonly queryCacheSize: number
  },
  upstream: { readonly baseUrl: string; readonly apiKey: Option.Option<Redacted.Redacted<string>> }
): EmbeddingSettings => ({
  mode: c.mode,
  baseUrl: Option.getOrElse(c.baseUrl, () => upstream.baseUrl),
  model: c.model,
  apiKey: Option.orElse(c.apiKey, () => upstream.apiKey),
  queryTimeoutMs: Option.getOrElse(c.queryTimeoutMs, () => QUERY_TIMEOUT_DEFAULTS[c.mode]),
  threads: c.threads,
  concurrency: c.concurrency,
  batchSize: c.batchSize,
  queryCacheSize: c.queryCacheSize
})

/** `a=b,c=d`, each side percent-decoded: the list format of `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES`. */
const parseKeyValueList = (list: string): Record<string, string> | undefined => {
  const entries: Array<[string, string]> = []
  for (const item of list.split(",")) {
    if (item.trim() === "") continue
    const at = item.indexOf("=")
    if (at <= 0) return undefined
    const key = Result.try(() => decodeURIComponent(item.slice(0, at).trim()))
    const value = Result.try(() => decodeURIComponent(item.slice(at + 1).trim()))
    if (Result.isFailure(key) || Result.isFailure(value) || key.success === "") return undefined
    entries.push([key.success, value.success])
  }
  return Object.fromEntries(entries)
}

// The message never repeats the value: header values are usually keys.
const KeyValueList = Schema.String.check(
  Schema.makeFilter((s) => parseKeyValueList(s) !== undefined, {
    expected: "comma-separated name=value pairs (percent-encoded)"
  })
)

const keyValueList = (name: string) =>
  Config.schema(KeyValueList, name).pipe(
    Config.withDefault(""),
    Config.map((list) => parseKeyValueList(list) ?? {})
  )

/** An unset or empty variable is `None`, anything else must be an http(s) URL. */
const optionalUrl = (name: string) =>
  optionalString(name).pipe(
    Config.flatMap(
      Option.match({
        onNone: () => Config.succeed(Option.none<string>()),
        onSome: () => Config.schema(HttpUrl, name).pipe(Config.map((u) => Option.some(u.trim())))
      })
    )
  )

/** The signal's own variable (`OTEL_EXPORTER_OTLP_TRACES_…`) over the shared one (`OTEL_EXPORTER_OTLP_…`). */
const otlpOption = <A>(make: (name: string) => Config.Config<A>, suffix: string) =>
  Config.all([
    Config.option(make(`OTEL_EXPORTER_OTLP_TRACES_${suffix}`)),
    Config.option(make(`OTEL_EXPORTER_OTLP_${suffix}`))
  ]).pipe(Config.map(([traces, shared]) => Option.orElse(traces, () => shared)))

/**
 * Span export, on as soon as an OTLP endpoint is set (and neither `OTEL_SDK_DISABLED=true` nor an
 * `OTEL_TRACES_EXPORTER` without `otlp` turns it off). The other variables are only read then, so
 * an `OTEL_*` environment meant for other services cannot stop a gateway that exports nothing.
 */
const tracingSettings: Config.Config<Option.Option<TracingSettings>> = Config.all({
  disabled: Config.Boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)),
  exporters: optionalString("OTEL_TRACES_EXPORTER").pipe(
    Config.map(
      Option.match({
        onNone: () => ["otlp"],
        onSome: (list) => list.split(",").map((item) => item.trim().toLowerCase())
      })
    )
  ),
  tracesEndpoint: optionalUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
  endpoint: optionalUrl("OTEL_EXPORTER_OTLP_ENDPOINT")
}).pipe(
  Config.flatMap((c) => {
    const url = Option.orElse(c.tracesEndpoint, () =>
      Option.map(c.endpoint, (base) => `${base.replace(/\/+$/, "")}/v1/traces`)
    )
    if (c.disabled || !c.exporters.includes("otlp") || Option.isNone(url)) return Config.succeed(Option.none())
    return Config.all({
      headers: keyValueList("OTEL_EXPORTER_OTLP_HEADERS"),
      tracesHeaders: keyValueList("OTEL_EXPORTER_OTLP_TRACES_HEADERS"),
      protocol: otlpOption((name) => Config.schema(OtlpProtocol, name), "PROTOCOL"),
      compression: otlpOption((name) => Config.Literals(["gzip", "none"], name), "COMPRESSION"),
      serviceName: optionalString("OTEL_SERVICE_NAME"),
      resourceAttributes: keyValueList("OTEL_RESOURCE_ATTRIBUTES"),
      scheduleDelayMs: positiveInt("OTEL_BSP_SCHEDULE_DELAY", 5000)
    }).pipe(
      Config.map((t) =>
        Option.some({
          url: url.value,
          headers: Redacted.make({ ...t.headers, ...t.tracesHeaders }),
          // OpenTelemetry's default; every collector and vendor endpoint takes both.
          protocol: Option.getOrElse(t.protocol, () => "http/protobuf" as const),
          compression: Option.getOrElse(t.compression, () => "none" as const),
          serviceName: Option.getOrElse(
            t.serviceName,
            () => t.resourceAttributes["service.name"] ?? "profile-memory-gateway"
          ),
          resourceAttributes: t.resourceAttributes,
          scheduleDelayMs: t.scheduleDelayMs
        })
      )
    )
  })
)

export const appConfigFromEnv: Config.Config<AppConfigShape> = Config.all({
  port: Config.Port("PORT").pipe(Config.withDefault(3100)),
  host: Config.String("HOST").pipe(Config.withDefault("0.0.0.0")),
  databaseUrl: optionalSecret("DATABASE_URL"),
  dataDir: Config.String("DATA_DIR").pipe(
    Config.withDefault("./data"),
    Config.map((dir) => path.resolve(dir))
  ),
  databasePoolMax: positiveInt("DATABASE_POOL_MAX", 10),
  databaseRequestTimeoutMs: positiveInt("DATABASE_REQUEST_TIMEOUT_MS", 1000),
  failOpen: Config.Boolean("FAIL_OPEN").pipe(Config.withDefault(true)),
  recordBufferTurns: positiveInt("RECORD_BUFFER_TURNS", 10_000),
  serviceApiKeys: secretList("SERVICE_API_KEY"),
  adminApiKeys: secretList("ADMIN_API_KEY"),
  trustedProxies: networkList("TRUSTED_PROXIES"),
  corsOrigins: originList("CORS_ORIGINS"),
  rateLimits: Config.all({
    userPerMinute: nonNegativeInt("RATE_LIMIT_USER_PER_MINUTE", 0),
    keyPerMinute: nonNegativeInt("RATE_LIMIT_KEY_PER_MINUTE", 0),
    apiClientPerMinute: nonNegativeInt("RATE_LIMIT_API_PER_MINUTE", 1200),
    authFailuresPerMinute: nonNegativeInt("AUTH_FAILURES_PER_MINUTE", 10),
    replicas: positiveInt("RATE_LIMIT_REPLICAS", 1)
  }),
  upstreamProvider: Config.schema(UpstreamProvider, "UPSTREAM_PROVIDER").pipe(Config.withDefault("openai" as const)),
  upstreamBaseUrl: url("UPSTREAM_BASE_URL").pipe(Config.withDefault("https://api.openai.com/v1")),
  anthropicBaseUrl: url("ANTHROPIC_BASE_URL").pipe(Config.withDefault("https://api.anthropic.com/v1")),
  upstreamApiKey: optionalSecret("UPSTREAM_API_KEY"),
  anthropicApiKey: optionalSecret("ANTHROPIC_API_KEY"),
  connectTimeoutMs: positiveInt("UPSTREAM_CONNECT_TIMEOUT_MS", 10_000),
  firstByteTimeoutMs: positiveInt("UPSTREAM_FIRST_BYTE_TIMEOUT_MS", 600_000),
  idleTimeoutMs: positiveInt("UPSTREAM_IDLE_TIMEOUT_MS", 60_000),
  extractionModel: Config.String("EXTRACTION_MODEL").pipe(Config.withDefault("gpt-4o-mini")),
  extractionBaseUrl: Config.option(url("EXTRACTION_BASE_URL")),
  extractionApiKey: optionalSecret("EXTRACTION_API_KEY"),
  extractionTuning: Config.all({
    concurrency: Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), "EXTRACTION_CONCURRENCY").pipe(
      Config.withDefault(2)
    ),
    maxAttempts: positiveInt("EXTRACTION_MAX_ATTEMPTS", 5),
    retryBaseMs: positiveInt("EXTRACTION_RETRY_BASE_MS", 1000),
    retryMaxMs: positiveInt("EXTRACTION_RETRY_MAX_MS", 60_000),
    leaseMs: positiveInt("EXTRACTION_LEASE_MS", 60_000),
    pollMs: positiveInt("EXTRACTION_POLL_MS", 10_000),
    timeoutMs: positiveInt("EXTRACTION_TIMEOUT_MS", 60_000),
    shutdownGraceMs: positiveInt("EXTRACTION_SHUTDOWN_GRACE_MS", 10_000),
    confidenceMargin: weight("EXTRACTION_CONFIDENCE_MARGIN", 0.1),
    traitMaxAgeDays: positiveInt("EXTRACTION_TRAIT_MAX_AGE_DAYS", 90),
    dedupeSimilarity: Config.schema(
      Schema.Finite.check(Schema.isBetween({ minimum: 0.1, maximum: 1 })),
      "EXTRACTION_DEDUPE_SIMILARITY"
    ).pipe(Config.withDefault(0.6)),
    summaryEveryChanges: positiveInt("SUMMARY_EVERY_CHANGES", 5),
    summaryMaxAgeHours: positiveInt("SUMMARY_MAX_AGE_HOURS", 24),
    maxIngestCharacters: positiveInt("INGEST_MAX_CHARACTERS", 100_000),
    maxInputCharacters: positiveInt("EXTRACTION_MAX_INPUT_CHARACTERS", 20_000),
    profileJobsPerHour: nonNegativeInt("EXTRACTION_JOBS_PER_PROFILE_PER_HOUR", 120),
    writeCues: Config.Boolean("EXTRACTION_WRITE_CUES").pipe(Config.withDefault(true))
  }),
  memoryHalfLifeDays: Config.all({
    fact: halfLife("MEMORY_HALF_LIFE_DAYS_FACT", 365),
    preference: halfLife("MEMORY_HALF_LIFE_DAYS_PREFERENCE", 180),
    event: halfLife("MEMORY_HALF_LIFE_DAYS_EVENT", 30),
    context: halfLife("MEMORY_HALF_LIFE_DAYS_CONTEXT", 60)
  }),
  injection: Config.all({
    maxTokens: positiveInt("INJECTION_MAX_TOKENS", 1000),
    maxMemories: positiveInt("INJECTION_MAX_MEMORIES", 10)
  }),
  ranking: Config.all({
    mode: Config.schema(RankingMode, "MEMORY_RANKING").pipe(Config.withDefault("learned" as const)),
    recencyHalfLifeDays: Config.schema(
      Schema.Finite.check(Schema.isGreaterThan(0)),
      "MEMORY_RECENCY_HALF_LIFE_DAYS"
    ).pipe(Config.withDefault(30)),
    relevanceFloor: Config.option(
      Config.schema(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 })), "MEMORY_RELEVANCE_FLOOR")
    ),
    // Set, they would be silently ignored: say so instead.
    retired: Config.all(RETIRED_RANKING_VARIABLES.map(retired))
  }),
  embeddings: Config.all({
    mode: Config.schema(EmbeddingsMode, "EMBEDDINGS").pipe(Config.withDefault("local" as const)),
    baseUrl: Config.option(url("EMBEDDING_BASE_URL")),
    model: Config.String("EMBEDDING_MODEL").pipe(Config.withDefault("text-embedding-3-small")),
    apiKey: optionalSecret("EMBEDDING_API_KEY"),
    queryTimeoutMs: Config.option(Config.schema(PositiveInt, "EMBEDDING_QUERY_TIMEOUT_MS")),
    threads: positiveInt("EMBEDDING_THREADS", 1),
    concurrency: Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), "EMBEDDING_CONCURRENCY").pipe(
      Config.withDefault(1)
    ),
    batchSize: Config.schema(
      Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 256 })),
      "EMBEDDING_BATCH_SIZE"
    ).pipe(Config.withDefault(32)),
    queryCacheSize: Config.schema(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
      "EMBEDDING_QUERY_CACHE_SIZE"
    ).pipe(Config.withDefault(1000))
  }),
  contextCache: Config.all({
    size: Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), "CONTEXT_CACHE_SIZE").pipe(
      Config.withDefault(1000)
    ),
    ttlMs: positiveInt("CONTEXT_CACHE_TTL_MS", 60_000),
    fenceMs: nonNegativeInt("CONTEXT_CACHE_FENCE_MS", 500)
  }),
  recordBatchMs: Config.schema(
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1000 })),
    "RECORD_BATCH_MS"
  ).pipe(Config.withDefault(0)),
  recordSynchronousCommit: Config.Boolean("RECORD_SYNCHRONOUS_COMMIT").pipe(Config.withDefault(true)),
  plugins: Config.all({
    specifiers: optionalString("PLUGINS").pipe(
      Config.map(
        Option.match({
          onNone: (): ReadonlyArray<string> => [],
          onSome: (list) =>
            list
              .split(",")
              .map((item) => item.trim())
              .filter((item) => item !== "")
        })
      )
    ),
    timeoutMs: positiveInt("PLUGIN_TIMEOUT_MS", 50),
    backgroundTimeoutMs: positiveInt("PLUGIN_BACKGROUND_TIMEOUT_MS", 5000)
  }),
  traitsFile: optionalString("TRAITS_FILE"),
  shutdownDrainMs: Config.schema(
    Schema.Int.check(Schema.isBetween({ minimum: 1000, maximum: 600_000 })),
    "SHUTDOWN_DRAIN_MS"
  ).pipe(Config.withDefault(15_000)),
  apiMaxBodyBytes: positiveInt("API_MAX_BODY_BYTES", 1024 * 1024),
  proxyMaxBodyBytes: positiveInt("MAX_REQUEST_BYTES", 10 * 1024 * 1024),
  maxMessages: positiveInt("MAX_MESSAGES", 1000),
  maxJsonDepth: positiveInt("MAX_JSON_DEPTH", 128),
  logLevel: Config.Literals(Object.keys(logLevels) as Array<keyof typeof logLevels>, "LOG_LEVEL").pipe(
    Config.withDefault("info" as const),
    Config.map((level) => logLevels[level])
  ),
  logFormat: Config.Literals(["pretty", "json"], "LOG_FORMAT").pipe(Config.withDefault("pretty" as const)),
  tracing: tracingSettings
}).pipe(
  Config.map((c): AppConfigShape => {
    // UPSTREAM_API_KEY is the default provider's key; the other provider needs X-Upstream-Key.
    const keyFor = (provider: UpstreamProvider) =>
      c.upstreamProvider === provider ? c.upstreamApiKey : Option.none<Redacted.Redacted<string>>()
    const defaultBaseUrl = c.upstreamProvider === "anthropic" ? c.anthropicBaseUrl : c.upstreamBaseUrl
    return {
      port: c.port,
      host: c.host,
      databaseUrl: c.databaseUrl,
      dataDir: c.dataDir,
      databasePoolMax: c.databasePoolMax,
      databaseRequestTimeoutMs: c.databaseRequestTimeoutMs,
      failOpen: c.failOpen,
      recordBufferTurns: c.recordBufferTurns,
      serviceApiKeys: c.serviceApiKeys,
      adminApiKeys: c.adminApiKeys,
      trustedProxies: c.trustedProxies,
      corsOrigins: c.corsOrigins,
      rateLimits: c.rateLimits,
      upstream: {
        provider: c.upstreamProvider,
        openai: { baseUrl: c.upstreamBaseUrl, apiKey: keyFor("openai") },
        // ANTHROPIC_API_KEY serves Anthropic whichever provider is the default (Messages clients, X-Upstream-Provider).
        anthropic: { baseUrl: c.anthropicBaseUrl, apiKey: Option.orElse(c.anthropicApiKey, () => keyFor("anthropic")) },
        connectTimeoutMs: c.connectTimeoutMs,
        firstByteTimeoutMs: c.firstByteTimeoutMs,
        idleTimeoutMs: c.idleTimeoutMs
      },
      // Extraction speaks the OpenAI chat format; Anthropic serves it too, under the same base URL.
      extraction: {
        model: c.extractionModel,
        baseUrl: Option.getOrElse(c.extractionBaseUrl, () => defaultBaseUrl),
        apiKey: Option.orElse(c.extractionApiKey, () => c.upstreamApiKey),
        ...c.extractionTuning
      },
      memoryHalfLifeDays: c.memoryHalfLifeDays,
      injection: c.injection,
      ranking: {
        mode: c.ranking.mode,
        recencyHalfLifeDays: c.ranking.recencyHalfLifeDays,
        relevanceFloor: c.ranking.relevanceFloor
      },
      embeddings: embeddingSettings(c.embeddings, {
        baseUrl: c.upstreamBaseUrl,
        // The default provider's key is an OpenAI-compatible key only when that provider is OpenAI.
        apiKey: c.upstreamProvider === "openai" ? c.upstreamApiKey : Option.none()
      }),
      contextCache: c.contextCache,
      recordBatchMs: c.recordBatchMs,
      recordSynchronousCommit: c.recordSynchronousCommit,
      plugins: c.plugins,
      traitsFile: c.traitsFile,
      shutdownDrainMs: c.shutdownDrainMs,
      apiMaxBodyBytes: c.apiMaxBodyBytes,
      proxyMaxBodyBytes: c.proxyMaxBodyBytes,
      maxMessages: c.maxMessages,
      maxJsonDepth: c.maxJsonDepth,
      logLevel: c.logLevel,
      logFormat: c.logFormat,
      tracing: c.tracing
    }
  })
)

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("gateway/config/AppConfig") {
  /** Reads the environment (or whatever `ConfigProvider` is installed). */
  static readonly layer = Layer.effect(AppConfig, Effect.map(appConfigFromEnv, AppConfig.of))

  /** For embedding and tests: explicit values over the defaults. */
  static readonly layerFrom = (values: Partial<AppConfigShape>) =>
    Layer.effect(
      AppConfig,
      Effect.map(appConfigFromEnv, (fromEnv) => AppConfig.of({ ...fromEnv, ...values }))
    )
}
