import { Effect, Layer, Logger, References } from "effect"
import { AppConfig } from "./AppConfig.ts"

/** Console logs in the configured format (`LOG_FORMAT`) from the configured level (`LOG_LEVEL`) up. */
export const LoggingLive = Layer.unwrap(
  Effect.map(AppConfig, (config) =>
    Layer.mergeAll(
      Logger.layer([config.logFormat === "json" ? Logger.consoleJson : Logger.consolePretty()]),
      Layer.succeed(References.MinimumLogLevel, config.logLevel)
    ))
)
