import { Schema } from "effect"
import { JobStatus } from "../domain/Job.ts"
import { WebhookEventType } from "../domain/WebhookEvent.ts"

export { WebhookEvent, WebhookEventType } from "../domain/WebhookEvent.ts"

/**
 * What `POST /api/webhooks/{id}/test` sends: shaped like every event, but about no profile (`profile`
 * is null) and of a type no webhook can subscribe to, so a receiver can tell it from a real change.
 */
export interface WebhookTestEvent {
  readonly id: string
  readonly type: "webhook.test"
  readonly createdAt: string
  readonly namespace: string
  readonly profile: null
  readonly data: Readonly<Record<string, never>>
}

/** What one test event's sending came to, as the caller of `POST /api/webhooks/{id}/test` sees it. */
export class WebhookTestResult extends Schema.Class<WebhookTestResult>("WebhookTestResult")({
  /** The test event's `id` (`evt_…`), as the receiver got it. */
  eventId: Schema.String,
  /** Whether the receiver answered 2xx in time: what a delivery counts as success. */
  delivered: Schema.Boolean,
  /** The HTTP status the receiver answered; null when it gave none (unreachable, too slow, refused). */
  status: Schema.NullOr(Schema.Int),
  /** From sending to the receiver's whole answer (or the failure). */
  durationMs: Schema.Int,
  /** Why it was not delivered (the receiver's status, or what went wrong reaching it); null when it was. */
  error: Schema.NullOr(Schema.String)
}) {}

/** A subscription, as listed: never its secret. */
export class Webhook extends Schema.Class<Webhook>("Webhook")({
  id: Schema.String,
  namespace: Schema.String,
  url: Schema.String,
  events: Schema.Array(WebhookEventType),
  description: Schema.NullOr(Schema.String),
  createdAt: Schema.DateTimeUtcFromDate
}) {}

/** One event's delivery to one webhook: a job of the queue. */
export class WebhookDelivery extends Schema.Class<WebhookDelivery>("WebhookDelivery")({
  /** The job's id (`/api/jobs/{id}`). */
  id: Schema.String,
  webhookId: Schema.String,
  eventId: Schema.String,
  type: WebhookEventType,
  profile: Schema.Struct({ id: Schema.String, externalId: Schema.String }),
  status: JobStatus,
  attempts: Schema.Int,
  /** Why the last attempt failed (the receiver's status, or what went wrong reaching it). */
  lastError: Schema.NullOr(Schema.String),
  /** The HTTP status the receiver last answered, when it answered. */
  responseStatus: Schema.NullOr(Schema.Int),
  /** When the next attempt is due (pending) or was made. */
  runAfter: Schema.DateTimeUtcFromDate,
  createdAt: Schema.DateTimeUtcFromDate,
  updatedAt: Schema.DateTimeUtcFromDate,
  finishedAt: Schema.NullOr(Schema.DateTimeUtcFromDate)
}) {}
