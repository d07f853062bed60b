import * as path from "node:path"
import { Config, Context, Effect, Layer, type LogLevel, Option, Redacted, Schema } from "effect"

export const UpstreamProvider = Schema.Literals(["openai", "anthropic"])
export type UpstreamProvider = typeof UpstreamProvider.Type

/** One configured upstream: where it is and the key used when a request brings none. */
export interface UpstreamEndpoint {
  readonly baseUrl: string
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
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
  /** `None` leaves `/api` and `/v1` open. */
  readonly serviceApiKey: Option.Option<Redacted.Redacted<string>>
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
    readonly relevanceWeight: number
    readonly importanceWeight: number
    readonly recencyWeight: number
    readonly recencyHalfLifeDays: number
  }
  readonly contextCache: {
    /** Profiles kept in memory (0: no cache). */
    readonly size: number
    readonly ttlMs: number
  }
  /**
   * How long a finished turn may wait to be written with others in one statement (0: at once; turns
   * that arrive while a write is in flight still share the next one).
   */
  readonly recordBatchMs: number
  readonly plugins: {
    /** `PLUGINS`: module paths or package names, in the order their hooks run. */
    readonly specifiers: ReadonlyArray<string>
    /** Budget of one hook call on the request path. */
    readonly timeoutMs: number
    /** Budget of one hook call in the background (after the response, in the extraction worker). */
    readonly backgroundTimeoutMs: number
  }
  readonly traitsFile: Option.Option<string>
  readonly apiMaxBodyBytes: number
  readonly proxyMaxBodyBytes: number
  readonly maxMessages: number
  readonly logLevel: LogLevel.LogLevel
  readonly logFormat: "pretty" | "json"
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
  Config.option(Config.String(name)).pipe(
    Config.map(Option.filter((value) => value.trim() !== ""))
  )

const optionalSecret = (name: string) =>
  optionalString(name).pipe(Config.map(Option.map((value) => Redacted.make(value.trim()))))

const url = (name: string) => Config.schema(HttpUrl, name).pipe(Config.map((u) => u.replace(/\/+$/, "")))

const positiveInt = (name: string, fallback: number) =>
  Config.schema(PositiveInt, name).pipe(Config.withDefault(fallback))

const weight = (name: string, fallback: number) =>
  Config.schema(Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0)), name).pipe(Config.withDefault(fallback))

const halfLife = (name: string, fallback: number) =>
  Config.schema(Schema.Finite.check(Schema.isGreaterThan(0)), name).pipe(Config.withDefault(fallback))

export const appConfigFromEnv: Config.Config<AppConfigShape> = Config.all({
  port: Config.Port("PORT").pipe(Config.withDefault(3100)),
  host: Config.String("HOST").pipe(Config.withDefault("0.0.0.0")),
  databaseUrl: optionalSecret("DATABASE_URL"),
  dataDir: Config.String("DATA_DIR").pipe(Config.withDefault("./data"), Config.map((dir) => path.resolve(dir))),
  databasePoolMax: positiveInt("DATABASE_POOL_MAX", 10),
  serviceApiKey: optionalSecret("SERVICE_API_KEY"),
  upstreamProvider: Config.schema(UpstreamProvider, "UPSTREAM_PROVIDER").pipe(Config.withDefault("openai" as const)),
  upstreamBaseUrl: url("UPSTREAM_BASE_URL").pipe(Config.withDefault("https://api.openai.com/v1")),
  anthropicBaseUrl: url("ANTHROPIC_BASE_URL").pipe(Config.withDefault("https://api.anthropic.com/v1")),
  upstreamApiKey: optionalSecret("UPSTREAM_API_KEY"),
  connectTimeoutMs: positiveInt("UPSTREAM_CONNECT_TIMEOUT_MS", 10_000),
  firstByteTimeoutMs: positiveInt("UPSTREAM_FIRST_BYTE_TIMEOUT_MS", 600_000),
  idleTimeoutMs: positiveInt("UPSTREAM_IDLE_TIMEOUT_MS", 60_000),
  extractionModel: Config.String("EXTRACTION_MODEL").pipe(Config.withDefault("gpt-4o-mini")),
  extractionBaseUrl: Config.option(url("EXTRACTION_BASE_URL")),
  extractionApiKey: optionalSecret("EXTRACTION_API_KEY"),
  extractionTuning: Config.all({
    concurrency: Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), "EXTRACTION_CONCURRENCY")
      .pipe(Config.withDefault(2)),
    maxAttempts: positiveInt("EXTRACTION_MAX_ATTEMPTS", 5),
    retryBaseMs: positiveInt("EXTRACTION_RETRY_BASE_MS", 1000),
    retryMaxMs: positiveInt("EXTRACTION_RETRY_MAX_MS", 60_000),
    leaseMs: positiveInt("EXTRACTION_LEASE_MS", 60_000),
    pollMs: positiveInt("EXTRACTION_POLL_MS", 10_000),
    timeoutMs: positiveInt("EXTRACTION_TIMEOUT_MS", 60_000),
    shutdownGraceMs: positiveInt("EXTRACTION_SHUTDOWN_GRACE_MS", 10_000),
    confidenceMargin: weight("EXTRACTION_CONFIDENCE_MARGIN", 0.1),
    traitMaxAgeDays: positiveInt("EXTRACTION_TRAIT_MAX_AGE_DAYS", 90),
    dedupeSimilarity: Config.schema(Schema.Finite.check(Schema.isBetween({ minimum: 0.1, maximum: 1 })), "EXTRACTION_DEDUPE_SIMILARITY")
      .pipe(Config.withDefault(0.6)),
    summaryEveryChanges: positiveInt("SUMMARY_EVERY_CHANGES", 5),
    summaryMaxAgeHours: positiveInt("SUMMARY_MAX_AGE_HOURS", 24),
    maxIngestCharacters: positiveInt("INGEST_MAX_CHARACTERS", 100_000)
  }),
  memoryHalfLifeDays: Config.all({
    fact: halfLife("MEMORY_HALF_LIFE_DAYS_FACT", 365),
    preference: halfLife("MEMORY_HALF_LIFE_DAYS_PREFERENCE", 180),
    event: halfLife("MEMORY_HALF_LIFE_DAYS_EVENT", 30),
    context: halfLife("MEMORY_HALF_LIFE_DAYS_CONTEXT", 60)
  }),
  injection: Config.all({
    maxTokens: positiveInt("INJECTION_MAX_TOKENS", 1000),
    maxMemories: positiveInt("INJECTION_MAX_MEMORIES", 10),
    relevanceWeight: weight("MEMORY_RANK_RELEVANCE_WEIGHT", 1),
    importanceWeight: weight("MEMORY_RANK_IMPORTANCE_WEIGHT", 1),
    recencyWeight: weight("MEMORY_RANK_RECENCY_WEIGHT", 0.5),
    recencyHalfLifeDays: Config.schema(Schema.Finite.check(Schema.isGreaterThan(0)), "MEMORY_RECENCY_HALF_LIFE_DAYS")
      .pipe(Config.withDefault(30))
  }),
  contextCache: Config.all({
    size: Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), "CONTEXT_CACHE_SIZE").pipe(Config.withDefault(1000)),
    ttlMs: positiveInt("CONTEXT_CACHE_TTL_MS", 60_000)
  }),
  recordBatchMs: Config.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1000 })), "RECORD_BATCH_MS")
    .pipe(Config.withDefault(5)),
  plugins: Config.all({
    specifiers: optionalString("PLUGINS").pipe(
      Config.map(Option.match({
        onNone: (): ReadonlyArray<string> => [],
        onSome: (list) => list.split(",").map((item) => item.trim()).filter((item) => item !== "")
      }))
    ),
    timeoutMs: positiveInt("PLUGIN_TIMEOUT_MS", 50),
    backgroundTimeoutMs: positiveInt("PLUGIN_BACKGROUND_TIMEOUT_MS", 5000)
  }),
  traitsFile: optionalString("TRAITS_FILE"),
  apiMaxBodyBytes: positiveInt("API_MAX_BODY_BYTES", 1024 * 1024),
  proxyMaxBodyBytes: positiveInt("MAX_REQUEST_BYTES", 10 * 1024 * 1024),
  maxMessages: positiveInt("MAX_MESSAGES", 1000),
  logLevel: Config.Literals(Object.keys(logLevels) as Array<keyof typeof logLevels>, "LOG_LEVEL").pipe(
    Config.withDefault("info" as const),
    Config.map((level) => logLevels[level])
  ),
  logFormat: Config.Literals(["pretty", "json"], "LOG_FORMAT").pipe(Config.withDefault("pretty" as const))
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
      serviceApiKey: c.serviceApiKey,
      upstream: {
        provider: c.upstreamProvider,
        openai: { baseUrl: c.upstreamBaseUrl, apiKey: keyFor("openai") },
        anthropic: { baseUrl: c.anthropicBaseUrl, apiKey: keyFor("anthropic") },
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
      contextCache: c.contextCache,
      recordBatchMs: c.recordBatchMs,
      plugins: c.plugins,
      traitsFile: c.traitsFile,
      apiMaxBodyBytes: c.apiMaxBodyBytes,
      proxyMaxBodyBytes: c.proxyMaxBodyBytes,
      maxMessages: c.maxMessages,
      logLevel: c.logLevel,
      logFormat: c.logFormat
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
