import { Schema } from "effect"
import { JobStatus } from "../domain/Job.ts"

/** What a webhook can subscribe to. */
export const WebhookEventType = Schema.Literals([
  "memory.created",
  "memory.updated",
  "memory.superseded",
  "memory.deleted",
  "trait.changed",
  "summary.updated",
  "profile.erased",
  "extraction.failed"
])
export type WebhookEventType = typeof WebhookEventType.Type

/**
 * An event as a receiver gets it (the body of a delivery). `data` depends on `type`: `memory`
 * (and `previous` for an update, `supersededBy` for a superseded one), `key`, `trait` and `previous`
 * for a trait, `summary` for a summary, `job` for a failed extraction, nothing for an erasure.
 */
export const WebhookEvent = Schema.Struct({
  /** The same in every delivery of the event (retries and replays too): receivers use it to drop repeats. */
  id: Schema.String,
  type: WebhookEventType,
  createdAt: Schema.String,
  namespace: Schema.String,
  profile: Schema.Struct({ id: Schema.String, externalId: Schema.String }),
  data: Schema.Record(Schema.String, Schema.Json)
})
export type WebhookEvent = typeof WebhookEvent.Type

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
