import { Config, Context, Effect, Layer, Logger, type LogLevel, Option, References } from "effect"
import { section } from "../config/values.ts"
import { jsonLogger } from "./jsonLogger.ts"
import { TracingConfig } from "./TracingConfig.ts"

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

const logFormat = Config.Literals(["pretty", "json"], "LOG_FORMAT").pipe(Config.withDefault("pretty" as const))

/** `LOG_LEVEL` (lower case, as documented) and `LOG_FORMAT`. */
export const loggingFromEnv = section({
  level: Config.Literals(Object.keys(logLevels) as Array<keyof typeof logLevels>, "LOG_LEVEL").pipe(
    Config.withDefault("info" as const),
    Config.map((level): LogLevel.LogLevel => logLevels[level])
  ),
  format: logFormat
})

export type LoggingSettings = Config.Success<typeof loggingFromEnv>

export class LoggingConfig extends Context.Service<LoggingConfig, LoggingSettings>()("gateway/config/LoggingConfig") {}

const consoleLogger = (format: LoggingSettings["format"], traceIds: boolean) =>
  format === "json" ? jsonLogger({ traceIds }) : Logger.consolePretty()

/**
 * Console logs in the configured format (`LOG_FORMAT`) from the configured level (`LOG_LEVEL`) up.
 * While spans are exported, log lines also become events of the span they were written in.
 */
export const LoggingLive = Layer.unwrap(
  Effect.gen(function* () {
    const logging = yield* LoggingConfig
    const tracing = Option.isSome(yield* TracingConfig)
    const console = consoleLogger(logging.format, tracing)
    return Layer.mergeAll(
      Logger.layer(tracing ? [console, Logger.tracerLogger] : [console]),
      Layer.succeed(References.MinimumLogLevel, logging.level)
    )
  })
)

/**
 * JSON lines from the first one with `LOG_FORMAT=json`, before the rest of the configuration is
 * read, so a failed start is reported in that format too (Effect's default logger otherwise, and
 * when `LOG_FORMAT` itself is wrong: its error still shows).
 */
export const StartupLoggingLive = Layer.unwrap(
  Effect.map(logFormat.pipe(Effect.orElseSucceed(() => "pretty" as const)), (format) =>
    format === "json" ? Logger.layer([jsonLogger({ traceIds: false })]) : Layer.empty
  )
)
