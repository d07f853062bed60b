import { randomBytes } from "node:crypto"
import { lookup } from "node:dns/promises"
import { Context, Effect, Layer, Option } from "effect"
import { layerDefaults } from "../config/defaults.ts"
import type { JobStatus } from "../domain/Job.ts"
import { type NamespaceScope, namespaceToCreateIn } from "../domain/Namespace.ts"
import { isUuid } from "../domain/Uuid.ts"
import { AuthConfig, authFromEnv } from "../keys/AuthConfig.ts"
import { configuredSecretBox } from "../keys/secretBox.ts"
import type { Webhook, WebhookDelivery, WebhookEventType } from "./Webhook.ts"
import { DeliveryNotFinished, DeliveryNotFound, WebhookNotFound, WebhookRefused } from "./WebhookErrors.ts"
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

      const create = Effect.fn("Webhooks.create")(function* (request: WebhookRequest, caller: NamespaceScope) {
        const target = namespaceToCreateIn(request.namespace, caller)
        if ("refused" in target) {
          const { status, code, message } = target.refused
          return yield* refused(status, code, message, "namespace")
        }
        const problem = urlProblem(request.url)
        if (problem !== undefined) return yield* refused(400, problem.code, problem.message, "url")
        yield* checkAddresses(new URL(request.url))
        const secret = `${SECRET_PREFIX}${randomBytes(32).toString("base64url")}`
        const webhook = yield* repo.insert({
          namespace: target.name,
          url: request.url,
          events: [...new Set(request.events)],
          description: request.description ?? null,
          secret: box === undefined ? secret : box.seal(secret),
          secretSealed: box !== undefined
        })
        return { webhook, secret }
      })

      const get = Effect.fn("Webhooks.get")(function* (id: string, caller: NamespaceScope) {
        const found = isUuid(id) ? yield* repo.find(id, caller) : Option.none()
        if (Option.isNone(found)) return yield* new WebhookNotFound({ id })
        return found.value
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

      return Webhooks.of({ create, list: repo.list, get, remove, deliveries, replay })
    })
  ).pipe(Layer.provide(WebhooksRepo.layer))

  /**
   * The live service with its repository on the database you provide, and the configuration's defaults:
   * private and loopback URLs refused, secrets stored unsealed (no `KEY_ENCRYPTION_KEY`). Acts in the
   * namespace scope each call is given. Needs only a `PgClient`.
   */
  static readonly layerTest = Webhooks.layer.pipe(
    Layer.provide([layerDefaults(WebhooksConfig, webhooksFromEnv), layerDefaults(AuthConfig, authFromEnv)])
  )
}
