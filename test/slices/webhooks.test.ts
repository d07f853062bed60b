import { randomBytes } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { allNamespaces } from "../../src/domain/Namespace.ts"
import { type WebhookRequest, Webhooks } from "../../src/webhooks/Webhooks.ts"
import * as TestDatabase from "../support/database.ts"

/** A namespace no other test of the file uses: the file shares one database. */
const freshNamespace = () => `hooks-${randomBytes(4).toString("hex")}`

/** One fresh namespace as a caller acting in it sees it (its name at hand). */
const freshScope = () => ({ _tag: "One", name: freshNamespace() }) as const

/** A public address written as one, so creating the webhook resolves no name. */
const hook = (path: string): WebhookRequest => ({
  url: `https://93.184.216.34/${path}`,
  events: ["memory.created"],
  description: undefined,
  namespace: undefined
})

layer(Webhooks.layerTest.pipe(Layer.provideMerge(TestDatabase.layer)), { timeout: "60 seconds" })("Webhooks", (it) => {
  it.effect("creates a webhook in the caller's namespace, then lists, finds and deletes it", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const caller = freshScope()
      const { webhook } = yield* webhooks.create(
        { ...hook("crm"), events: ["memory.created", "trait.changed", "memory.created"], description: "CRM sync" },
        caller
      )
      assert.deepInclude(webhook, { namespace: caller.name, url: "https://93.184.216.34/crm", description: "CRM sync" })
      assert.deepStrictEqual(webhook.events, ["memory.created", "trait.changed"])
      const other = yield* webhooks.create(hook("audit"), caller)

      assert.deepStrictEqual(
        (yield* webhooks.list(caller)).map((w) => w.id),
        [other.webhook.id, webhook.id]
      )
      assert.strictEqual((yield* webhooks.get(webhook.id, caller)).url, webhook.url)

      assert.strictEqual((yield* webhooks.remove(webhook.id, caller)).id, webhook.id)
      assert.strictEqual((yield* webhooks.get(webhook.id, caller).pipe(Effect.flip))._tag, "WebhookNotFound")
      assert.strictEqual((yield* webhooks.remove(webhook.id, caller).pipe(Effect.flip))._tag, "WebhookNotFound")
      assert.deepStrictEqual(
        (yield* webhooks.list(caller)).map((w) => w.id),
        [other.webhook.id]
      )
    })
  )

  it.effect("keeps a namespace's webhooks out of another namespace's reach", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const mine = freshScope()
      const theirs = freshScope()
      // The global admin creates in the namespace it names.
      const { webhook } = yield* webhooks.create({ ...hook("mine"), namespace: mine.name }, allNamespaces)
      assert.strictEqual(webhook.namespace, mine.name)

      assert.deepStrictEqual(yield* webhooks.list(theirs), [])
      assert.strictEqual((yield* webhooks.get(webhook.id, theirs).pipe(Effect.flip))._tag, "WebhookNotFound")
      assert.strictEqual((yield* webhooks.remove(webhook.id, theirs).pipe(Effect.flip))._tag, "WebhookNotFound")
      const refused = yield* webhooks.create({ ...hook("x"), namespace: mine.name }, theirs).pipe(Effect.flip)
      assert.deepInclude(refused, { _tag: "WebhookRefused", status: 403, code: "namespace_not_allowed" })

      assert.strictEqual((yield* webhooks.get(webhook.id, mine)).id, webhook.id)
      assert.include(
        (yield* webhooks.list(allNamespaces)).map((w) => w.id),
        webhook.id
      )
    })
  )

  it.effect("shows the signing secret when the webhook is created, and never after", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const sql = yield* PgClient.PgClient
      const caller = freshScope()
      const first = yield* webhooks.create(hook("a"), caller)
      const second = yield* webhooks.create(hook("b"), caller)

      assert.match(first.secret, /^whsec_[A-Za-z0-9_-]{43}$/)
      assert.notStrictEqual(first.secret, second.secret)
      const shown = JSON.stringify([
        first.webhook,
        yield* webhooks.get(first.webhook.id, caller),
        yield* webhooks.list(caller)
      ])
      assert.notInclude(shown, first.secret)
      assert.notInclude(shown, "whsec_")
      // Kept to sign the deliveries with (as it is: no KEY_ENCRYPTION_KEY to seal it with).
      const [kept] = yield* sql<{ secret: string; secretSealed: boolean }>`
        SELECT secret, secret_sealed FROM webhooks WHERE id = ${first.webhook.id}`
      assert.deepStrictEqual(kept, { secret: first.secret, secretSealed: false })
    })
  )

  it.effect("refuses a URL into a private or loopback network, and keeps nothing", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const caller = freshScope()
      for (const url of [
        "https://127.0.0.1/hook",
        "http://10.1.2.3/hook",
        "https://169.254.169.254/latest",
        "http://[::1]/"
      ]) {
        const refused = yield* webhooks.create({ ...hook(""), url }, caller).pipe(Effect.flip)
        assert.deepInclude(refused, { _tag: "WebhookRefused", code: "webhook_url_not_allowed", param: "url" }, url)
      }
      const malformed = yield* webhooks.create({ ...hook(""), url: "ftp://93.184.216.34/" }, caller).pipe(Effect.flip)
      assert.deepInclude(malformed, { _tag: "WebhookRefused", code: "invalid_url" })
      assert.deepStrictEqual(yield* webhooks.list(caller), [])
    })
  )

  it.effect("replays a finished delivery as the same event, and refuses to replay one still pending", () =>
    Effect.gen(function* () {
      const webhooks = yield* Webhooks
      const sql = yield* PgClient.PgClient
      const caller = freshScope()
      const { webhook } = yield* webhooks.create(hook("replays"), caller)
      // An event as the database queues it in the transaction of a change.
      yield* sql`SELECT queue_webhook_event(${caller.name}, gen_random_uuid(), 'ada', 'memory.created', '{}'::jsonb)`
      const [pending] = yield* webhooks.deliveries(webhook.id, caller, { status: undefined, limit: 10 })
      assert.deepInclude(pending, { webhookId: webhook.id, type: "memory.created", status: "pending", attempts: 0 })
      assert.strictEqual(pending!.profile.externalId, "ada")

      const early = yield* webhooks.replay(webhook.id, pending!.id, caller).pipe(Effect.flip)
      assert.deepInclude(early, { _tag: "DeliveryNotFinished", status: "pending" })

      yield* sql`UPDATE extraction_jobs SET status = 'failed', attempts = 12, finished_at = now(), last_error = 'HTTP 503'
                 WHERE id = ${pending!.id}::uuid`
      const replayed = yield* webhooks.replay(webhook.id, pending!.id, caller)
      assert.notStrictEqual(replayed.id, pending!.id)
      assert.deepInclude(replayed, { eventId: pending!.eventId, status: "pending", attempts: 0 })
      assert.deepStrictEqual(
        (yield* webhooks.deliveries(webhook.id, caller, { status: "failed", limit: 10 })).map((d) => [
          d.id,
          d.responseStatus
        ]),
        [[pending!.id, 503]]
      )
      assert.strictEqual(
        (yield* webhooks.replay(webhook.id, pending!.id, freshScope()).pipe(Effect.flip))._tag,
        "WebhookNotFound"
      )
    })
  )
})
