import { type Config, Context } from "effect"
import { positiveInt, section } from "../config/values.ts"

/** The per-namespace retention sweep (the policies themselves are each namespace's settings). */
export const retentionFromEnv = section({
  /**
   * How often each replica deletes expired memories and the turns past their namespace's `turnsDays`
   * (`RETENTION_SWEEP_MS`), starting at once.
   */
  sweepMs: positiveInt("RETENTION_SWEEP_MS", 15 * 60 * 1000)
})

export type RetentionSettings = Config.Success<typeof retentionFromEnv>

export class RetentionConfig extends Context.Service<RetentionConfig, RetentionSettings>()(
  "gateway/retention/RetentionConfig"
) {}
