import { Schema } from "effect"

/** What a webhook can subscribe to. */
export const WebhookEventType = Schema.Literals([
  "memory.created",
  "memory.updated",
  "memory.superseded",
  "memory.deleted",
  "memory.expired",
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
