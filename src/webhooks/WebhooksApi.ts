import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { JobStatus } from "../domain/Job.ts"
import { StorableString } from "../domain/storableText.ts"
import { ApiValidation } from "../http/ApiValidation.ts"
import { Limit } from "../http/apiFields.ts"
import { BadRequest, Conflict, Forbidden, NotFound } from "../http/OpenAiError.ts"
import { Webhook, WebhookDelivery, WebhookEventType, WebhookTestResult } from "./Webhook.ts"

export class WebhookCreated extends Schema.Class<WebhookCreated>("WebhookCreated")(
  {
    ...Webhook.fields,
    /** The signing secret: shown here only, never again. */
    secret: Schema.String
  },
  { httpApiStatus: 201, description: "The webhook was created; `secret` signs its deliveries and is shown only here" }
) {}

/** A webhook's events: at least one, of the types there are (`webhook.test` is not one: it is only sent on request). */
const Events = Schema.Array(WebhookEventType).check(Schema.isMinLength(1))
const Description = StorableString.check(Schema.isMaxLength(500))

export class WebhookUpdated extends Schema.Class<WebhookUpdated>("WebhookUpdated")(
  {
    webhook: Webhook,
    /** The new signing secret, when `rotateSecret` asked for one: shown here only, never again. */
    secret: Schema.optionalKey(Schema.String)
  },
  { description: "The webhook as changed; `secret` only when it was rotated" }
) {}

const SIGNING =
  "Each delivery is a POST of the event as JSON with `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 " +
  'of "<t>.<raw body>" keyed with the secret>` (verify with `verifyWebhookSignature` from the package).'

/** `/api/webhooks`: a namespace's subscriptions to what changes in its profiles, and their deliveries. */
export class WebhooksGroup extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("create", "/", {
      payload: Schema.Struct({
        url: Schema.String,
        events: Events,
        description: Schema.optionalKey(Description),
        namespace: Schema.optionalKey(Schema.String)
      }),
      success: WebhookCreated,
      error: [BadRequest, Forbidden]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Create a webhook",
        description:
          "Subscribes `url` to `events` about the profiles of one namespace (default: the caller's). The URL must " +
          "reach a public address (unless the gateway runs with WEBHOOK_ALLOW_PRIVATE_URLS=true). " +
          SIGNING +
          " Delivered at least once, in order per profile, retried with backoff."
      })
    ),
    HttpApiEndpoint.get("list", "/", {
      success: Schema.Struct({ webhooks: Schema.Array(Webhook) })
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List webhooks",
        description: "The caller's namespace's webhooks (the global admin: every namespace's), newest first"
      })
    ),
    HttpApiEndpoint.get("get", "/:id", {
      params: { id: Schema.String },
      success: Schema.Struct({ webhook: Webhook }),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Read a webhook" })),
    HttpApiEndpoint.patch("update", "/:id", {
      params: { id: Schema.String },
      payload: Schema.Struct({
        url: Schema.optionalKey(Schema.String),
        events: Schema.optionalKey(Events),
        description: Schema.optionalKey(Schema.NullOr(Description)),
        rotateSecret: Schema.optionalKey(Schema.Boolean)
      }),
      success: WebhookUpdated,
      error: [NotFound, BadRequest]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Edit a webhook",
        description:
          "Changes any of `url`, `events` and `description` (`null` clears it), checked as on creation. " +
          "Deliveries not yet made go to the new URL; an event type no longer in `events` is not queued from " +
          "then on (those already queued are still delivered). The secret stays unless `rotateSecret: true`: " +
          "then a new one is in this answer only, and signs every delivery sent from now on."
      })
    ),
    HttpApiEndpoint.delete("delete", "/:id", {
      params: { id: Schema.String },
      success: Schema.Struct({ webhook: Webhook }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({ summary: "Delete a webhook", description: "Its deliveries not yet made are dropped" })
    ),
    HttpApiEndpoint.post("test", "/:id/test", {
      params: { id: Schema.String },
      success: WebhookTestResult,
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Send a test event",
        description:
          'Sends the webhook one `{"type": "webhook.test", "profile": null, "data": {}}` event now, signed and sent ' +
          "as deliveries are (the same URL rules and `WEBHOOK_TIMEOUT_MS`), and answers with what came of it: " +
          "`delivered` (a 2xx in time), the receiver's `status` (null without an answer), `durationMs` and `error`. " +
          "It is not queued, retried or listed among the deliveries."
      })
    ),
    HttpApiEndpoint.get("deliveries", "/:id/deliveries", {
      params: { id: Schema.String },
      query: { status: Schema.optionalKey(JobStatus), limit: Schema.optionalKey(Limit) },
      success: Schema.Struct({ deliveries: Schema.Array(WebhookDelivery) }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List a webhook's deliveries",
        description: "Newest first, with their status, attempts and the receiver's last answer (`status` filters)"
      })
    ),
    HttpApiEndpoint.post("replay", "/:id/deliveries/:deliveryId/replay", {
      params: { id: Schema.String, deliveryId: Schema.String },
      success: Schema.Struct({ delivery: WebhookDelivery }).annotate({ httpApiStatus: 202 }),
      error: [NotFound, Conflict]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Replay a delivery",
        description:
          "Sends a delivered or failed event again (same event id), as a new delivery behind the profile's others. " +
          "409 while the delivery is still pending or running."
      })
    )
  )
  .prefix("/api/webhooks")
  .middleware(ApiValidation)
  .annotateMerge(
    OpenApi.annotations({ description: "Signed notifications of what changes in a namespace's profiles" })
  ) {}
