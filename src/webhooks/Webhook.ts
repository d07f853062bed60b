import { Schema } from "effect"
import { JobStatus } from "../domain/Job.ts"
import { WebhookEventType } from "../domain/WebhookEvent.ts"

export { WebhookEvent, WebhookEventType } from "../domain/WebhookEvent.ts"

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
