import { Config, Effect, Layer, Logger, Option, References } from "effect"
import { jsonLogger } from "../observability/jsonLogger.ts"
import { AppConfig, type AppConfigShape } from "./AppConfig.ts"

const consoleLogger = (format: AppConfigShape["logFormat"], traceIds: boolean) =>
  format === "json" ? jsonLogger({ traceIds }) : Logger.consolePretty()

/**
 * Console logs in the configured format (`LOG_FORMAT`) from the configured level (`LOG_LEVEL`) up.
 * While spans are exported, log lines also become events of the span they were written in.
 */
export const LoggingLive = Layer.unwrap(
  Effect.map(AppConfig, (config) => {
    const tracing = Option.isSome(config.tracing)
    const console = consoleLogger(config.logFormat, tracing)
    return Layer.mergeAll(
      Logger.layer(tracing ? [console, Logger.tracerLogger] : [console]),
      Layer.succeed(References.MinimumLogLevel, config.logLevel)
    )
  })
)

/**
 * JSON lines from the first one with `LOG_FORMAT=json`, before the rest of the configuration is
 * read, so a failed start is reported in that format too (Effect's default logger otherwise, and
 * when `LOG_FORMAT` itself is wrong: its error still shows).
 */
export const StartupLoggingLive = Layer.unwrap(
  Effect.map(
    Config.Literals(["pretty", "json"], "LOG_FORMAT").pipe(
      Config.withDefault("pretty" as const),
      Effect.orElseSucceed(() => "pretty" as const)
    ),
    (format) => (format === "json" ? Logger.layer([jsonLogger({ traceIds: false })]) : Layer.empty)
  )
)
