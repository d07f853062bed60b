import { type Config, Context } from "effect"
import { optionalString, positiveInt, section } from "../config/values.ts"

/** Token usage: how long each event is kept, and the operator's prices. */
export const usageFromEnv = section({
  /**
   * `USAGE_RETENTION_DAYS`: each provider call's own row is kept this long (the per-day sums that
   * reports and budgets read are kept for good).
   */
  retentionDays: positiveInt("USAGE_RETENTION_DAYS", 90),
  /** How often each replica deletes the rows past their retention (`USAGE_RETENTION_SWEEP_MS`). */
  sweepMs: positiveInt("USAGE_RETENTION_SWEEP_MS", 3_600_000),
  /** `MODEL_PRICES`: a JSON file of prices per million tokens by model; unset: costs are `null`. */
  pricesFile: optionalString("MODEL_PRICES")
})

export type UsageSettings = Config.Success<typeof usageFromEnv>

export class UsageConfig extends Context.Service<UsageConfig, UsageSettings>()("gateway/usage/UsageConfig") {}
