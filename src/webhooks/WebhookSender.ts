import { lookup as dnsLookup } from "node:dns"
import type { LookupFunction } from "node:net"
import { Clock, Context, Effect, Layer, Option, Predicate, Redacted } from "effect"
import { Agent } from "undici"
import type { ClaimedDelivery } from "../jobs/JobsRepo.ts"
import { AuthConfig } from "../keys/AuthConfig.ts"
import { configuredSecretBox } from "../keys/secretBox.ts"
import { SIGNATURE_HEADER, signatureHeader } from "./signature.ts"
import type { WebhookEvent, WebhookTestEvent } from "./Webhook.ts"
import { DeliveryFailed } from "./WebhookErrors.ts"
import { WebhooksConfig } from "./WebhooksConfig.ts"
import { WebhooksRepo } from "./WebhooksRepo.ts"
import { isPublicAddress, literalAddress } from "./webhookUrl.ts"

/** What a successful delivery leaves in its job's `result`. */
export interface DeliveryResult {
  readonly status: number
  readonly durationMs: number
}

/**
 * Resolves like `dns.lookup`, but fails when any address of the name is not public: the connection
 * is made to the addresses checked here, so a name that changes what it points to after the webhook
 * was created (DNS rebinding) reaches nothing private.
 */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error !== null) return callback(error, "")
    const hidden = addresses.find(({ address }) => !isPublicAddress(address))
    if (hidden !== undefined) {
      const refused: NodeJS.ErrnoException = new Error(
        `${hostname} resolves to ${hidden.address}, not a public address`
      )
      refused.code = "EADDRNOTPUBLIC"
      return callback(refused, "")
    }
    const [first] = addresses
    if (options.all === true) callback(null, addresses)
    else if (first === undefined)
      callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "")
    else callback(null, first.address, first.family)
  })
}

/** What went wrong reaching the receiver, in words an operator can act on (no stack, no internals). */
const transportProblem = (error: unknown): string => {
  for (let current = error, depth = 0; Predicate.isObject(current) && depth < 5; depth++) {
    const code = current["code"]
    if (code === "EADDRNOTPUBLIC" && Predicate.isString(current["message"])) return current["message"]
    if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT")
      return "the receiver did not answer in time"
    if (Predicate.isString(code)) return `could not reach the receiver (${code})`
    current = current["cause"]
  }
  return "could not reach the receiver"
}

/**
 * One event's sending to one webhook: the event, and the delivery it is (the job's id and attempt; a
 * test event, which is no job, gives its own id and attempt 1).
 */
export interface Sending {
  readonly event: WebhookEvent | WebhookTestEvent
  readonly deliveryId: string
  readonly attempt: number
}

/**
 * Sends events: the event as JSON, signed (`X-Service-Signature`), to the webhook's URL, and a 2xx
 * answer within `WEBHOOK_TIMEOUT_MS` is success. Anything else fails (the worker retries a delivery
 * with backoff). Redirects are not followed: a receiver that moved is told by its URL. Queued
 * deliveries and test events go through the one `send`, so a test is what a delivery would be.
 */
export class WebhookSender extends Context.Service<
  WebhookSender,
  {
    /** Sends one event to the webhook as it is now (its URL and secret are read at the time of sending). */
    readonly send: (webhookId: string, sending: Sending) => Effect.Effect<DeliveryResult, DeliveryFailed>
    /** Sends a queued delivery (the worker's attempt). */
    readonly deliver: (delivery: ClaimedDelivery) => Effect.Effect<DeliveryResult, DeliveryFailed>
  }
>()("gateway/webhooks/WebhookSender") {
  static readonly layer = Layer.effect(
    WebhookSender,
    Effect.gen(function* () {
      const config = yield* WebhooksConfig
      const repo = yield* WebhooksRepo
      const box = yield* configuredSecretBox((yield* AuthConfig).keyEncryptionKey)
      const agent = yield* Effect.acquireRelease(
        Effect.sync(
          () =>
            new Agent({
              connect: {
                timeout: config.timeoutMs,
                ...(config.allowPrivateUrls ? {} : { lookup: publicOnlyLookup })
              },
              headersTimeout: config.timeoutMs,
              bodyTimeout: config.timeoutMs
            })
        ),
        (agent) => Effect.promise(() => agent.destroy())
      )

      /** Nothing was sent (`durationMs` 0), or the receiver gave no answer (`status` null). */
      const failed = (message: string, durationMs = 0, status: number | null = null) =>
        new DeliveryFailed({ message, status, durationMs })

      const send = Effect.fn("WebhookSender.send")(function* (webhookId: string, sending: Sending) {
        const target = yield* repo.target(webhookId)
        if (Option.isNone(target)) return yield* failed("the webhook was deleted")
        const secret = target.value.secretSealed ? box?.open(target.value.secret) : Redacted.make(target.value.secret)
        if (secret === undefined)
          return yield* failed(
            "the webhook's secret cannot be opened: KEY_ENCRYPTION_KEY is not the one it was sealed with"
          )
        const url = new URL(target.value.url)
        // A literal address is connected to without a lookup: checked here instead.
        const literal = literalAddress(url.hostname)
        if (!config.allowPrivateUrls && literal !== undefined && !isPublicAddress(literal))
          return yield* failed(`${literal} is not a public address`)

        const { event } = sending
        const body = JSON.stringify(event)
        const startedAt = yield* Clock.currentTimeMillis
        const elapsed = Effect.map(Clock.currentTimeMillis, (now) => now - startedAt)
        const response = yield* Effect.tryPromise({
          try: (signal) =>
            agent.request({
              origin: url.origin,
              path: `${url.pathname}${url.search}`,
              method: "POST",
              headers: {
                "content-type": "application/json",
                "user-agent": "profile-memory-gateway-webhooks/1",
                [SIGNATURE_HEADER]: signatureHeader(Redacted.value(secret), body, Math.floor(startedAt / 1000)),
                "x-service-event-id": event.id,
                "x-service-event-type": event.type,
                "x-service-delivery-id": sending.deliveryId,
                "x-service-delivery-attempt": String(sending.attempt)
              },
              body,
              signal
            }),
          catch: (error) => failed(transportProblem(error))
        }).pipe(
          Effect.timeoutOrElse({
            duration: config.timeoutMs,
            orElse: () => Effect.fail(failed("the receiver did not answer in time"))
          }),
          Effect.catch((problem) =>
            Effect.flatMap(elapsed, (durationMs) => Effect.fail(failed(problem.message, durationMs)))
          )
        )
        // The answer's body is not wanted; reading it to the end lets the connection be reused.
        yield* Effect.promise(() => response.body.dump({ limit: 64 * 1024 }).catch(() => undefined))
        const durationMs = yield* elapsed
        if (response.statusCode < 200 || response.statusCode > 299)
          return yield* failed(`HTTP ${response.statusCode} from the receiver`, durationMs, response.statusCode)
        return { status: response.statusCode, durationMs }
      })

      const deliver = (delivery: ClaimedDelivery) =>
        send(delivery.webhookId, { event: delivery.input, deliveryId: delivery.id, attempt: delivery.attempts })

      return WebhookSender.of({ send, deliver })
    })
  ).pipe(Layer.provide(WebhooksRepo.layer))
}
