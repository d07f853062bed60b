import * as path from "node:path"
import { Config, Context, Effect, Layer, type LogLevel, Option, Redacted, Schema } from "effect"

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
  readonly upstreamBaseUrl: string
  readonly upstreamApiKey: Option.Option<Redacted.Redacted<string>>
  readonly extractionModel: string
  readonly extractionBaseUrl: string
  readonly extractionApiKey: Option.Option<Redacted.Redacted<string>>
  readonly traitsFile: Option.Option<string>
  readonly apiMaxBodyBytes: number
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

export const appConfigFromEnv: Config.Config<AppConfigShape> = Config.all({
  port: Config.Port("PORT").pipe(Config.withDefault(3100)),
  host: Config.String("HOST").pipe(Config.withDefault("0.0.0.0")),
  databaseUrl: optionalSecret("DATABASE_URL"),
  dataDir: Config.String("DATA_DIR").pipe(Config.withDefault("./data"), Config.map((dir) => path.resolve(dir))),
  databasePoolMax: Config.schema(PositiveInt, "DATABASE_POOL_MAX").pipe(Config.withDefault(10)),
  serviceApiKey: optionalSecret("SERVICE_API_KEY"),
  upstreamBaseUrl: url("UPSTREAM_BASE_URL").pipe(Config.withDefault("https://api.openai.com/v1")),
  upstreamApiKey: optionalSecret("UPSTREAM_API_KEY"),
  extractionModel: Config.String("EXTRACTION_MODEL").pipe(Config.withDefault("gpt-4o-mini")),
  extractionBaseUrl: Config.option(url("EXTRACTION_BASE_URL")),
  extractionApiKey: optionalSecret("EXTRACTION_API_KEY"),
  traitsFile: optionalString("TRAITS_FILE"),
  apiMaxBodyBytes: Config.schema(PositiveInt, "API_MAX_BODY_BYTES").pipe(Config.withDefault(1024 * 1024)),
  logLevel: Config.Literals(Object.keys(logLevels) as Array<keyof typeof logLevels>, "LOG_LEVEL").pipe(
    Config.withDefault("info" as const),
    Config.map((level) => logLevels[level])
  ),
  logFormat: Config.Literals(["pretty", "json"], "LOG_FORMAT").pipe(Config.withDefault("pretty" as const))
}).pipe(
  // The extraction model talks to the upstream unless told otherwise.
  Config.map(({ extractionBaseUrl, extractionApiKey, ...config }) => ({
    ...config,
    extractionBaseUrl: Option.getOrElse(extractionBaseUrl, () => config.upstreamBaseUrl),
    extractionApiKey: Option.orElse(extractionApiKey, () => config.upstreamApiKey)
  }))
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
