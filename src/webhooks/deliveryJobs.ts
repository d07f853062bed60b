import { Effect } from "effect"
import { type JobHandler, type JobLine, retryable } from "../jobs/JobHandler.ts"
import { type ClaimedDelivery, JobQueue } from "../jobs/JobQueue.ts"
import { WebhookSender } from "./WebhookSender.ts"
import { WebhooksConfig } from "./WebhooksConfig.ts"

/**
 * `webhook` jobs: one event's delivery to one webhook, on a line of their own (`WEBHOOK_*`: loops,
 * lease, retries). A claim takes one webhook's deliveries about one profile in event order, and
 * never more than `WEBHOOK_MAX_IN_FLIGHT` of one webhook at a time across replicas, so a receiver
 * that never answers holds no more loops than that.
 */
export const deliveryJobs = Effect.gen(function* () {
  const config = yield* WebhooksConfig
  const queue = yield* JobQueue
  const sender = yield* WebhookSender
  const line: JobLine<ClaimedDelivery> = {
    name: "webhook",
    loops: config.concurrency,
    leaseMs: config.leaseMs,
    retry: config,
    claim: (workerId) => queue.claimDelivery(workerId, config.leaseMs, config.maxInFlight),
    nextDueInMs: () => queue.nextDeliveryDueInMs(config.maxInFlight),
    // A delivery changes no profile.
    committed: () => Effect.void
  }
  const handler: JobHandler<ClaimedDelivery> = {
    kind: "webhook",
    line,
    run: (delivery) =>
      sender.deliver(delivery).pipe(
        Effect.map((result) => ({ apply: Effect.succeed(result) })),
        Effect.mapError(retryable)
      )
  }
  return [handler]
})
