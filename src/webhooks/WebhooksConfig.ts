import { type Config, Context } from "effect"
import { flag, nonNegativeInt, positiveInt, section } from "../config/values.ts"

/** How webhooks are delivered: by background loops of every replica, each delivery a queued job. */
export const webhooksFromEnv = section({
  /**
   * Loops per replica that deliver (`WEBHOOK_CONCURRENCY`; 0: this replica delivers nothing, others do).
   * A slow receiver holds a loop for at most `WEBHOOK_TIMEOUT_MS` per attempt, and no more loops
   * than `WEBHOOK_MAX_IN_FLIGHT` at once.
   */
  concurrency: nonNegativeInt("WEBHOOK_CONCURRENCY", 2),
  /**
   * Deliveries of one webhook in flight at once, across replicas (`WEBHOOK_MAX_IN_FLIGHT`). A
   * receiver that never answers holds this many loops; above 1, a webhook takes another only while
   * no webhook with nothing in flight has a delivery due.
   */
  maxInFlight: positiveInt("WEBHOOK_MAX_IN_FLIGHT", 1),
  /** How long a receiver has to answer (`WEBHOOK_TIMEOUT_MS`). */
  timeoutMs: positiveInt("WEBHOOK_TIMEOUT_MS", 10_000),
  /** Attempts before a delivery is marked failed (`WEBHOOK_MAX_ATTEMPTS`): with the defaults, retries span about 3½ hours. */
  maxAttempts: positiveInt("WEBHOOK_MAX_ATTEMPTS", 12),
  /** The first retry's delay (`WEBHOOK_RETRY_BASE_MS`), doubled with each further one… */
  retryBaseMs: positiveInt("WEBHOOK_RETRY_BASE_MS", 10_000),
  /** …up to this (`WEBHOOK_RETRY_MAX_MS`). */
  retryMaxMs: positiveInt("WEBHOOK_RETRY_MAX_MS", 3_600_000),
  /** A delivery's lease (`WEBHOOK_LEASE_MS`): a replica that died mid-delivery has it retried after this. */
  leaseMs: positiveInt("WEBHOOK_LEASE_MS", 30_000),
  /**
   * Whether a webhook may target loopback, private, link-local or other non-public addresses
   * (`WEBHOOK_ALLOW_PRIVATE_URLS`): off, so a namespace's admin cannot make the gateway call into
   * its own network.
   */
  allowPrivateUrls: flag("WEBHOOK_ALLOW_PRIVATE_URLS", false)
})

export type WebhooksSettings = Config.Success<typeof webhooksFromEnv>

export class WebhooksConfig extends Context.Service<WebhooksConfig, WebhooksSettings>()(
  "gateway/webhooks/WebhooksConfig"
) {}
