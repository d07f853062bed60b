import { Context } from "effect"
import type { RetryPolicy } from "./JobHandler.ts"

/**
 * The worker's pace (the safety-net poll, the grace a running job gets at shutdown) and the lease
 * and retries of a profile's work. Read from the extraction section (`EXTRACTION_POLL_MS`,
 * `EXTRACTION_LEASE_MS`, …): `extraction/ExtractionLine.ts` provides it.
 */
export class JobSettings extends Context.Service<
  JobSettings,
  {
    readonly pollMs: number
    readonly shutdownGraceMs: number
    readonly leaseMs: number
    readonly retry: RetryPolicy
  }
>()("gateway/jobs/JobSettings") {}
