import { type Config, Context } from "effect"
import { nonNegativeInt, optionalString, positiveInt, section } from "../config/values.ts"

/** Token usage: how long each event is kept, and the operator's prices. */
export const usageFromEnv = section({
  /**
   * `USAGE_RETENTION_DAYS`: each provider call's own row is kept this long (the per-day sums that
   * reports and budgets read are kept for good).
   */
  retentionDays: positiveInt("USAGE_RETENTION_DAYS", 90),
  /** How often each replica deletes the rows past their retention (`USAGE_RETENTION_SWEEP_MS`). */
  sweepMs: positiveInt("USAGE_RETENTION_SWEEP_MS", 3_600_000),
  /**
   * `USAGE_BATCH_MS`: how long the usage writer lets events gather before it writes them (one statement
   * for all): the answers' usage costs a write per batch, not per request. This replica's budgets count
   * what waits; another replica's see it once written.
   */
  batchMs: nonNegativeInt("USAGE_BATCH_MS", 200),
  /** `MODEL_PRICES`: a JSON file of prices per million tokens by model; unset: costs are `null`. */
  pricesFile: optionalString("MODEL_PRICES")
})

export type UsageSettings = Config.Success<typeof usageFromEnv>

export class UsageConfig extends Context.Service<UsageConfig, UsageSettings>()("gateway/usage/UsageConfig") {}
