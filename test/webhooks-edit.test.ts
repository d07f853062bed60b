import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhookSignature } from "../src/webhooks/signature.ts"
import { eventually, type FakeUpstream, type RecordedRequest, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { type ErrorJson, expectError } from "./support/wire.ts"

/** Issue 43: a webhook can be edited (URL, events, description, secret) and sent a test event. */

const ADMIN = "sk-admin-webhook-edit-0123456789"
const admin = { authorization: `Bearer ${ADMIN}` }

interface WebhookJson {
  readonly id: string
  readonly namespace: string
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly description: string | null
}

interface Event {
  readonly id: string
  readonly type: string
  readonly createdAt: string
  readonly namespace: string
  readonly profile: { readonly id: string; readonly externalId: string } | null
  readonly data: Record<string, unknown>
}

interface TestResult {
  readonly eventId: string
  readonly delivered: boolean
  readonly status: number | null
  readonly durationMs: number
  readonly error: string | null
}

/** A receiver on loopback: what it got, and how it answers (200 unless told). */
const startReceiver = async () => {
  const server = await startFakeUpstream()
  server.handler = () => ({ kind: "json", status: 200, body: { ok: true } })
  return server
}

const eventOf = (request: RecordedRequest) => JSON.parse(request.rawBody) as Event

/** The events a receiver got about one user, in the order they arrived. */
const eventsFor = (receiver: FakeUpstream, externalId: string) =>
  receiver.requests.map(eventOf).filter((event) => event.profile?.externalId === externalId)

const signedWith = (secret: string, request: RecordedRequest) =>
  verifyWebhookSignature({ secret, header: String(request.headers["x-service-signature"]), body: request.rawBody })

describe("editing a webhook", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({
      ADMIN_API_KEY: ADMIN,
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_RETRY_BASE_MS: "100",
      WEBHOOK_RETRY_MAX_MS: "500",
      WEBHOOK_TIMEOUT_MS: "1500"
    })
  })
  afterAll(() => gw.close())
  afterEach(async () => {
    await gw.query("DELETE FROM webhooks")
  })

  const call = <T>(method: string, path: string, json?: unknown, headers: Record<string, string> = admin) =>
    gw.request<T>(method, path, { headers, ...(json === undefined ? {} : { json }) })

  const subscribe = async (url: string, events: ReadonlyArray<string>, headers = admin) => {
    const created = await call<WebhookJson & { secret: string }>("POST", "/api/webhooks", { url, events }, headers)
    expect(created.status).toBe(201)
    return created.body
  }

  const remember = async (user: string, content: string) => {
    const created = await call<{ memory: { id: string } }>("POST", `/api/profiles/${user}/memories`, {
      content,
      type: "fact"
    })
    expect(created.status).toBe(201)
    return created.body.memory.id
  }

  it("sends the deliveries not yet made, and the next ones, to a new URL, signed with the same secret", async () => {
    const before = await startReceiver()
    // Down: the first event is retried until the webhook points elsewhere.
    before.handler = () => ({ kind: "text", status: 503, body: "down" })
    const after = await startReceiver()
    const hook = await subscribe(`${before.url}/old`, ["memory.created"])
    const user = "edit-url"
    await call("POST", "/api/profiles", { externalId: user })
    await remember(user, "Grows tomatoes")
    const [stuck] = await eventually(async () =>
      eventsFor(before, user).length > 0 ? eventsFor(before, user) : undefined
    )

    const edited = await call<Record<string, unknown>>("PATCH", `/api/webhooks/${hook.id}`, {
      url: `${after.url}/new?v=2`
    })
    expect(edited.status).toBe(200)
    const { secret, ...listed } = hook
    // No `secret`: it is unchanged.
    expect(edited.body).toEqual({ webhook: { ...listed, url: `${after.url}/new?v=2` } })
    expect((await call<{ webhook: WebhookJson }>("GET", `/api/webhooks/${hook.id}`)).body.webhook.url).toBe(
      `${after.url}/new?v=2`
    )

    // The event that was being retried arrives at the new URL, then the next one.
    const [retried] = await eventually(async () =>
      eventsFor(after, user).length > 0 ? eventsFor(after, user) : undefined
    )
    expect(retried!.id).toBe(stuck!.id)
    await remember(user, "Keeps chickens")
    const arrived = await eventually(async () =>
      eventsFor(after, user).length >= 2 ? eventsFor(after, user) : undefined
    )
    expect(arrived.map((event) => (event.data["memory"] as { content: string }).content)).toEqual([
      "Grows tomatoes",
      "Keeps chickens"
    ])
    // The old URL got nothing but the attempts made before the edit.
    expect(new Set(eventsFor(before, user).map((event) => event.id))).toEqual(new Set([stuck!.id]))
    for (const request of after.requests) {
      expect(request.path).toBe("/v1/new?v=2")
      expect(signedWith(secret, request)).toBe(true)
    }
    await before.close()
    await after.close()
  })

  it("stops delivering an event type removed from the events, and starts delivering one added", async () => {
    const receiver = await startReceiver()
    const hook = await subscribe(receiver.url, ["memory.created", "trait.changed"])
    const user = "edit-events"
    await call("POST", "/api/profiles", { externalId: user })
    await remember(user, "Speaks Basque")
    await eventually(async () => (eventsFor(receiver, user).length >= 1 ? true : undefined))

    const edited = await call<{ webhook: WebhookJson }>("PATCH", `/api/webhooks/${hook.id}`, {
      events: ["trait.changed", "memory.deleted", "memory.deleted"]
    })
    expect(edited.status).toBe(200)
    expect(edited.body.webhook).toMatchObject({ url: receiver.url, events: ["trait.changed", "memory.deleted"] })

    const later = await remember(user, "Speaks Catalan")
    await call("PUT", `/api/profiles/${user}/traits/language`, { value: "Basque" })
    await call("DELETE", `/api/profiles/${user}/memories/${later}`)
    // One user's events arrive in order: once the deletion is in, a memory.created queued before it would be too.
    const events = await eventually(async () => {
      const got = eventsFor(receiver, user)
      return got.some((event) => event.type === "memory.deleted") ? got : undefined
    })
    expect(events.map((event) => event.type)).toEqual(["memory.created", "trait.changed", "memory.deleted"])
    expect((events[0]!.data["memory"] as { content: string }).content).toBe("Speaks Basque")
    const deliveries = await call<{ deliveries: Array<{ type: string }> }>("GET", `/api/webhooks/${hook.id}/deliveries`)
    expect(deliveries.body.deliveries.map((delivery) => delivery.type).sort()).toEqual([
      "memory.created",
      "memory.deleted",
      "trait.changed"
    ])
    await receiver.close()
  })

  it("changes only what the edit names; a null description clears it", async () => {
    const hook = await subscribe("http://127.0.0.1:9/hook", ["memory.created"])
    const described = await call<{ webhook: WebhookJson }>("PATCH", `/api/webhooks/${hook.id}`, {
      description: "CRM sync"
    })
    expect(described.status).toBe(200)
    expect(described.body.webhook).toMatchObject({
      url: "http://127.0.0.1:9/hook",
      events: ["memory.created"],
      description: "CRM sync"
    })
    const cleared = await call<{ webhook: WebhookJson }>("PATCH", `/api/webhooks/${hook.id}`, { description: null })
    expect(cleared.body.webhook.description).toBeNull()
    expect((await call<{ webhook: WebhookJson }>("GET", `/api/webhooks/${hook.id}`)).body.webhook).toMatchObject({
      url: "http://127.0.0.1:9/hook",
      events: ["memory.created"],
      description: null
    })
  })

  it("rotates the secret on request: shown once, and what signs every delivery from then on", async () => {
    const receiver = await startReceiver()
    const hook = await subscribe(receiver.url, ["memory.created"])
    const rotated = await call<{ webhook: WebhookJson; secret: string }>("PATCH", `/api/webhooks/${hook.id}`, {
      rotateSecret: true
    })
    expect(rotated.status).toBe(200)
    expect(rotated.body.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/)
    expect(rotated.body.secret).not.toBe(hook.secret)
    expect(rotated.body.webhook.url).toBe(receiver.url)
    const shownAfter = JSON.stringify([
      (await call("GET", `/api/webhooks/${hook.id}`)).body,
      (await call("GET", "/api/webhooks")).body
    ])
    expect(shownAfter).not.toContain(rotated.body.secret)

    const user = "edit-rotate"
    await call("POST", "/api/profiles", { externalId: user })
    await remember(user, "Sails on weekends")
    await eventually(async () => (eventsFor(receiver, user).length > 0 ? true : undefined))
    const tested = await call<TestResult>("POST", `/api/webhooks/${hook.id}/test`)
    expect(tested.body.delivered).toBe(true)
    expect(receiver.requests).toHaveLength(2)
    for (const request of receiver.requests) {
      expect(signedWith(rotated.body.secret, request)).toBe(true)
      expect(signedWith(hook.secret, request)).toBe(false)
    }
    await receiver.close()
  })

  it("answers 404 for a webhook that is unknown or another namespace's, to an edit and to a test", async () => {
    const key = await call<{ key: string }>("POST", "/api/keys", { namespace: "edit-other", scope: "admin" })
    const other = { authorization: `Bearer ${key.body.key}` }
    const mine = await subscribe("http://127.0.0.1:9/mine", ["memory.created"])
    for (const id of ["00000000-0000-4000-8000-000000000000", "not-a-uuid"]) {
      expectError(await call("PATCH", `/api/webhooks/${id}`, { description: "x" }), 404, "webhook_not_found")
      expectError(await call("POST", `/api/webhooks/${id}/test`), 404, "webhook_not_found")
    }
    expectError(
      await call("PATCH", `/api/webhooks/${mine.id}`, { url: "http://127.0.0.1:9/stolen" }, other),
      404,
      "webhook_not_found"
    )
    expectError(await call("POST", `/api/webhooks/${mine.id}/test`, undefined, other), 404, "webhook_not_found")
    expect((await call<{ webhook: WebhookJson }>("GET", `/api/webhooks/${mine.id}`)).body.webhook.url).toBe(
      "http://127.0.0.1:9/mine"
    )
  })
})

describe("a webhook's test event", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({
      ADMIN_API_KEY: ADMIN,
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_RETRY_BASE_MS: "100",
      WEBHOOK_RETRY_MAX_MS: "500",
      WEBHOOK_TIMEOUT_MS: "1000"
    })
  })
  afterAll(() => gw.close())
  afterEach(async () => {
    await gw.query("DELETE FROM webhooks")
  })

  const subscribe = async (url: string) => {
    const created = await gw.request<{ id: string; secret: string }>("POST", "/api/webhooks", {
      headers: admin,
      json: { url, events: ["memory.created"] }
    })
    expect(created.status).toBe(201)
    return created.body
  }

  const test = (id: string) => gw.request<TestResult>("POST", `/api/webhooks/${id}/test`, { headers: admin })

  /** What the webhook has queued: a test event leaves nothing, neither a delivery nor a job. */
  const queued = async (id: string) => {
    const listed = await gw.request<{ deliveries: Array<unknown> }>("GET", `/api/webhooks/${id}/deliveries`, {
      headers: admin
    })
    const [jobs] = await gw.query<{ count: number }>(
      "SELECT count(*)::int AS count FROM extraction_jobs WHERE webhook_id = $1",
      [id]
    )
    return { deliveries: listed.body.deliveries.length, jobs: jobs?.count }
  }

  it("sends one signed webhook.test event now and reports the receiver's answer", async () => {
    const receiver = await startReceiver()
    receiver.handler = () => ({ kind: "json", status: 202, body: { accepted: true } })
    const { id, secret } = await subscribe(`${receiver.url}/hooks`)
    const answer = await test(id)
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ delivered: true, status: 202, error: null })
    expect(answer.body.durationMs).toBeGreaterThanOrEqual(0)

    // Sent before the answer, once.
    expect(receiver.requests).toHaveLength(1)
    const [request] = receiver.requests
    expect(request!.method).toBe("POST")
    expect(request!.path).toBe("/v1/hooks")
    expect(signedWith(secret, request!)).toBe(true)
    expect(signedWith(`${secret}x`, request!)).toBe(false)
    const event = eventOf(request!)
    expect(event).toEqual({
      id: answer.body.eventId,
      type: "webhook.test",
      createdAt: event.createdAt,
      namespace: "default",
      profile: null,
      data: {}
    })
    expect(event.id).toMatch(/^evt_[0-9a-f]{32}$/)
    expect(new Date(event.createdAt).toISOString()).toBe(event.createdAt)
    expect(request!.headers).toMatchObject({
      "content-type": "application/json",
      "x-service-event-id": event.id,
      "x-service-event-type": "webhook.test",
      "x-service-delivery-attempt": "1"
    })

    // A second test is another event.
    const again = await test(id)
    expect(again.body.eventId).not.toBe(answer.body.eventId)
    expect(receiver.requests).toHaveLength(2)
    expect(await queued(id)).toEqual({ deliveries: 0, jobs: 0 })
    await receiver.close()
  })

  it("reports a receiver's error status as not delivered, and does not retry it", async () => {
    const receiver = await startReceiver()
    receiver.handler = () => ({ kind: "text", status: 500, body: "oops" })
    const { id } = await subscribe(receiver.url)
    const answer = await test(id)
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ delivered: false, status: 500, error: "HTTP 500 from the receiver" })
    // Nothing is left to retry it: a retry is a queued job, and there is none.
    expect(await queued(id)).toEqual({ deliveries: 0, jobs: 0 })
    expect(receiver.requests).toHaveLength(1)
    await receiver.close()
  })

  it("reports a receiver it cannot reach, or that does not answer in time, with no status", async () => {
    const gone = await startReceiver()
    const { id } = await subscribe(gone.url)
    await gone.close()
    const refused = await test(id)
    expect(refused.status).toBe(200)
    expect(refused.body).toMatchObject({ delivered: false, status: null })
    expect(refused.body.error).toMatch(/could not reach the receiver/)

    const silent = await startReceiver()
    silent.handler = () => ({ kind: "hang" })
    const slow = await subscribe(silent.url)
    const timedOut = await test(slow.id)
    expect(timedOut.body).toMatchObject({
      delivered: false,
      status: null,
      error: "the receiver did not answer in time"
    })
    // WEBHOOK_TIMEOUT_MS, as for a delivery.
    expect(timedOut.body.durationMs).toBeGreaterThanOrEqual(900)
    expect(timedOut.body.durationMs).toBeLessThan(5000)
    expect(await queued(slow.id)).toEqual({ deliveries: 0, jobs: 0 })
    await silent.close()
  })
})

describe("with private URLs refused", () => {
  it("checks an edit as it checks a new webhook, stores nothing it refuses, and tests under the same rules", async () => {
    const strict = await startGateway({ ADMIN_API_KEY: ADMIN })
    try {
      const created = await strict.request<WebhookJson & { secret: string }>("POST", "/api/webhooks", {
        headers: admin,
        json: { url: "https://93.184.216.34/hook", events: ["memory.created"], description: "kept" }
      })
      expect(created.status).toBe(201)
      const { id } = created.body
      const stored = () =>
        strict.query("SELECT url, events, description, secret, secret_sealed FROM webhooks WHERE id = $1", [id])
      const before = await stored()

      const refuse = async (json: unknown, code: string, param: string) => {
        const answer = await strict.request("PATCH", `/api/webhooks/${id}`, { headers: admin, json })
        expectError(answer, 400, code)
        expect((answer.body as ErrorJson).error.param).toBe(param)
      }
      await refuse({ url: "http://127.0.0.1:9/hook" }, "webhook_url_not_allowed", "url")
      await refuse({ url: "http://169.254.169.254/latest" }, "webhook_url_not_allowed", "url")
      await refuse({ url: "http://[::ffff:10.0.0.1]/hook" }, "webhook_url_not_allowed", "url")
      await refuse({ url: "ftp://example.com/hook" }, "invalid_url", "url")
      await refuse({ url: "https://user:pw@example.com/hook" }, "invalid_url", "url")
      await refuse({ url: "not a url" }, "invalid_url", "url")
      await refuse({ url: null }, "invalid_url", "url")
      await refuse({ events: [] }, "invalid_events", "events")
      await refuse({ events: ["memory.exploded"] }, "invalid_events", "events.0")
      // The test event is sent on request only: nothing subscribes to it.
      await refuse({ events: ["webhook.test"] }, "invalid_events", "events.0")
      await refuse({ description: "x".repeat(501) }, "invalid_description", "description")
      // A valid change beside a refused one is not made either.
      await refuse(
        { description: "changed", events: ["trait.changed"], rotateSecret: true, url: "http://10.1.2.3/hook" },
        "webhook_url_not_allowed",
        "url"
      )
      expect(await stored()).toEqual(before)

      // A webhook whose URL became private (created while private URLs were allowed) is refused at sending too.
      const receiver = await startReceiver()
      try {
        await strict.query("UPDATE webhooks SET url = $1 WHERE id = $2", [receiver.url, id])
        const answer = await strict.request<TestResult>("POST", `/api/webhooks/${id}/test`, { headers: admin })
        expect(answer.status).toBe(200)
        expect(answer.body).toMatchObject({
          delivered: false,
          status: null,
          error: "127.0.0.1 is not a public address"
        })
        expect(receiver.requests).toHaveLength(0)
      } finally {
        await receiver.close()
      }
    } finally {
      await strict.close()
    }
  })
})
