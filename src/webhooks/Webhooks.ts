import { randomBytes, randomUUID } from "node:crypto"
import { lookup } from "node:dns/promises"
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { layerDefaults } from "../config/defaults.ts"
import type { JobStatus } from "../domain/Job.ts"
import { type NamespaceScope, namespaceToCreateIn } from "../domain/Namespace.ts"
import { isUuid } from "../domain/Uuid.ts"
import { AuthConfig, authFromEnv } from "../keys/AuthConfig.ts"
import { configuredSecretBox } from "../keys/secretBox.ts"
import {
  type Webhook,
  type WebhookDelivery,
  type WebhookEventType,
  type WebhookTestEvent,
  WebhookTestResult
} from "./Webhook.ts"
import { DeliveryNotFinished, DeliveryNotFound, WebhookNotFound, WebhookRefused } from "./WebhookErrors.ts"
import { WebhookSender } from "./WebhookSender.ts"
import { WebhooksConfig, webhooksFromEnv } from "./WebhooksConfig.ts"
import { WebhooksRepo } from "./WebhooksRepo.ts"
import { isPublicAddress, literalAddress, urlProblem } from "./webhookUrl.ts"

/** How every signing secret starts (as Stripe's and Svix's do): recognisable in a config file or a leak scan. */
export const SECRET_PREFIX = "whsec_"

export interface WebhookRequest {
  readonly url: string
  readonly events: ReadonlyArray<WebhookEventType>
  readonly description: string | undefined
  readonly namespace: string | undefined
}

/** An edit of a webhook: what is `undefined` stays as it is; a `null` description clears it. */
export interface WebhookEdit {
  readonly url: string | undefined
  readonly events: ReadonlyArray<WebhookEventType> | undefined
  readonly description: string | null | undefined
  /** A new signing secret, in the result only; deliveries signed from then on use it. */
  readonly rotateSecret: boolean
}

/**
 * A namespace's webhooks: subscriptions of a URL to events about its profiles. The events are
 * queued by the database in the transaction of each change (migration 0013) and delivered by the
 * background worker (`WebhookSender`); this service manages the subscriptions and their deliveries.
 */
export class Webhooks extends Context.Service<
  Webhooks,
  {
    /** Creates a webhook; its signing secret is in the result only. */
    readonly create: (
      request: WebhookRequest,
      caller: NamespaceScope
    ) => Effect.Effect<{ readonly webhook: Webhook; readonly secret: string }, WebhookRefused>
    /**
     * Changes a webhook's URL, events or description, checked as `create` checks them; with
     * `rotateSecret`, gives it a new secret, in the result only (`secret` is otherwise undefined).
     */
    readonly update: (
      id: string,
      edit: WebhookEdit,
      caller: NamespaceScope
    ) => Effect.Effect<
      { readonly webhook: Webhook; readonly secret: string | undefined },
      WebhookNotFound | WebhookRefused
    >
    /**
     * Sends the webhook a signed `webhook.test` event now, as a delivery is sent, and says what came
     * of it: nothing is queued, retried or listed among its deliveries.
     */
    readonly test: (id: string, caller: NamespaceScope) => Effect.Effect<WebhookTestResult, WebhookNotFound>
    readonly list: (caller: NamespaceScope) => Effect.Effect<ReadonlyArray<Webhook>>
    readonly get: (id: string, caller: NamespaceScope) => Effect.Effect<Webhook, WebhookNotFound>
    /** Deletes the webhook; its pending deliveries are dropped. */
    readonly remove: (id: string, caller: NamespaceScope) => Effect.Effect<Webhook, WebhookNotFound>
    readonly deliveries: (
      id: string,
      caller: NamespaceScope,
      options: { readonly status: JobStatus | undefined; readonly limit: number }
    ) => Effect.Effect<ReadonlyArray<WebhookDelivery>, WebhookNotFound>
    readonly replay: (
      id: string,
      deliveryId: string,
      caller: NamespaceScope
    ) => Effect.Effect<WebhookDelivery, WebhookNotFound | DeliveryNotFound | DeliveryNotFinished>
  }
>()("gateway/webhooks/Webhooks") {
  static readonly layer = Layer.effect(
    Webhooks,
    Effect.gen(function* () {
      const repo = yield* WebhooksRepo
      const sender = yield* WebhookSender
      const config = yield* WebhooksConfig
      const box = yield* configuredSecretBox((yield* AuthConfig).keyEncryptionKey)

      const refused = (status: 400 | 403, code: string, message: string, param: string) =>
        new WebhookRefused({ status, code, message, param })

      /** The URL's addresses, all of which must be public (unless private ones are allowed). */
      const checkAddresses = Effect.fn("Webhooks.checkAddresses")(function* (url: URL) {
        if (config.allowPrivateUrls) return
        const literal = literalAddress(url.hostname)
        const addresses =
          literal === undefined
            ? yield* Effect.tryPromise(() => lookup(url.hostname, { all: true, verbatim: true })).pipe(
                Effect.mapError(() =>
                  refused(400, "webhook_url_unresolvable", `url: '${url.hostname}' does not resolve`, "url")
                )
              )
            : [{ address: literal }]
        const hidden = addresses.find(({ address }) => !isPublicAddress(address))
        if (hidden !== undefined) {
          return yield* refused(
            400,
            "webhook_url_not_allowed",
            `url: '${url.hostname}' is not a public address (${hidden.address}); ` +
              "set WEBHOOK_ALLOW_PRIVATE_URLS=true to allow private and loopback targets",
            "url"
          )
        }
      })

      /** A URL a webhook may be given: well formed, and reaching public addresses only (unless allowed). */
      const checkUrl = Effect.fn("Webhooks.checkUrl")(function* (raw: string) {
        const problem = urlProblem(raw)
        if (problem !== undefined) return yield* refused(400, problem.code, problem.message, "url")
        yield* checkAddresses(new URL(raw))
      })

      /** Each event once (the API's schema refuses an empty list before this; a caller in code may not). */
      const checkEvents = (events: ReadonlyArray<WebhookEventType>) =>
        events.length === 0
          ? Effect.fail(refused(400, "invalid_events", "events must name at least one event type", "events"))
          : Effect.succeed([...new Set(events)])

      /** A new signing secret: as the caller sees it once, and as it is stored (sealed when the gateway can). */
      const newSecret = () => {
        const secret = `${SECRET_PREFIX}${randomBytes(32).toString("base64url")}`
        return { secret, stored: { value: box === undefined ? secret : box.seal(secret), sealed: box !== undefined } }
      }

      const create = Effect.fn("Webhooks.create")(function* (request: WebhookRequest, caller: NamespaceScope) {
        const target = namespaceToCreateIn(request.namespace, caller)
        if ("refused" in target) {
          const { status, code, message } = target.refused
          return yield* refused(status, code, message, "namespace")
        }
        yield* checkUrl(request.url)
        const events = yield* checkEvents(request.events)
        const { secret, stored } = newSecret()
        const webhook = yield* repo.insert({
          namespace: target.name,
          url: request.url,
          events,
          description: request.description ?? null,
          secret: stored.value,
          secretSealed: stored.sealed
        })
        return { webhook, secret }
      })

      const get = Effect.fn("Webhooks.get")(function* (id: string, caller: NamespaceScope) {
        const found = isUuid(id) ? yield* repo.find(id, caller) : Option.none()
        if (Option.isNone(found)) return yield* new WebhookNotFound({ id })
        return found.value
      })

      const update = Effect.fn("Webhooks.update")(function* (id: string, edit: WebhookEdit, caller: NamespaceScope) {
        yield* get(id, caller)
        if (edit.url !== undefined) yield* checkUrl(edit.url)
        const events = edit.events === undefined ? undefined : yield* checkEvents(edit.events)
        const rotated = edit.rotateSecret ? newSecret() : undefined
        const updated = yield* repo.update(id, caller, {
          url: edit.url,
          events,
          description: edit.description,
          secret: rotated?.stored
        })
        // Deleted since it was read.
        if (Option.isNone(updated)) return yield* new WebhookNotFound({ id })
        return { webhook: updated.value, secret: rotated?.secret }
      })

      const test = Effect.fn("Webhooks.test")(function* (id: string, caller: NamespaceScope) {
        const webhook = yield* get(id, caller)
        const event: WebhookTestEvent = {
          id: `evt_${randomUUID().replaceAll("-", "")}`,
          type: "webhook.test",
          createdAt: DateTime.formatIso(yield* DateTime.now),
          namespace: webhook.namespace,
          profile: null,
          data: {}
        }
        // Not a job: the event's own id stands for the delivery's, and it is the first and only attempt.
        return yield* sender.send(webhook.id, { event, deliveryId: event.id, attempt: 1 }).pipe(
          Effect.match({
            onSuccess: ({ status, durationMs }) =>
              new WebhookTestResult({ eventId: event.id, delivered: true, status, durationMs, error: null }),
            onFailure: (failure) =>
              new WebhookTestResult({
                eventId: event.id,
                delivered: false,
                status: failure.status,
                durationMs: failure.durationMs,
                error: failure.message
              })
          })
        )
      })

      const remove = Effect.fn("Webhooks.remove")(function* (id: string, caller: NamespaceScope) {
        const removed = isUuid(id) ? yield* repo.remove(id, caller) : Option.none()
        if (Option.isNone(removed)) return yield* new WebhookNotFound({ id })
        return removed.value
      })

      const deliveries = Effect.fn("Webhooks.deliveries")(function* (
        id: string,
        caller: NamespaceScope,
        options: { readonly status: JobStatus | undefined; readonly limit: number }
      ) {
        yield* get(id, caller)
        return yield* repo.deliveries(id, caller, options.status, options.limit)
      })

      const replay = Effect.fn("Webhooks.replay")(function* (id: string, deliveryId: string, caller: NamespaceScope) {
        yield* get(id, caller)
        const replayed = isUuid(deliveryId) ? yield* repo.replay(id, deliveryId, caller) : Option.none()
        if (Option.isSome(replayed)) return replayed.value
        const existing = isUuid(deliveryId) ? yield* repo.delivery(id, deliveryId, caller) : Option.none()
        if (Option.isNone(existing)) return yield* new DeliveryNotFound({ id: deliveryId })
        return yield* new DeliveryNotFinished({ id: deliveryId, status: existing.value.status })
      })

      return Webhooks.of({ create, update, test, list: repo.list, get, remove, deliveries, replay })
    })
  ).pipe(Layer.provide([WebhooksRepo.layer, WebhookSender.layer]))

  /**
   * The live service with its repository on the database you provide, and the configuration's defaults:
   * private and loopback URLs refused, secrets stored unsealed (no `KEY_ENCRYPTION_KEY`). Acts in the
   * namespace scope each call is given. Needs only a `PgClient`.
   */
  static readonly layerTest = Webhooks.layer.pipe(
    Layer.provide([layerDefaults(WebhooksConfig, webhooksFromEnv), layerDefaults(AuthConfig, authFromEnv)])
  )
}
