import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhookSignature } from "../src/webhooks/signature.ts"
import {
  completion,
  eventually,
  type FakeUpstream,
  type RecordedRequest,
  type Reply,
  startFakeUpstream
} from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { freePort, spawnService, waitUntilHealthy } from "./support/serviceProcess.ts"
import { expectError } from "./support/wire.ts"

const ADMIN = "sk-admin-webhooks-0123456789"
const APP = "sk-app-webhooks-0123456789"
const ALL_EVENTS = [
  "memory.created",
  "memory.updated",
  "memory.superseded",
  "memory.deleted",
  "trait.changed",
  "summary.updated",
  "profile.erased",
  "extraction.failed"
]

interface WebhookEvent {
  readonly id: string
  readonly type: string
  readonly createdAt: string
  readonly namespace: string
  readonly profile: { readonly id: string; readonly externalId: string }
  readonly data: Record<string, unknown>
}

interface Delivery {
  readonly id: string
  readonly eventId: string
  readonly type: string
  readonly status: string
  readonly attempts: number
  readonly lastError: string | null
  readonly responseStatus: number | null
  readonly profile: { readonly externalId: string }
}

/** A receiver on loopback (the scripted server the provider double is made of): what it got, and how it answers. */
const startReceiver = async () => {
  const server = await startFakeUpstream()
  server.handler = () => ({ kind: "json", status: 200, body: { ok: true } })
  return server
}

const eventOf = (request: RecordedRequest) => JSON.parse(request.rawBody) as WebhookEvent

/** The events a receiver got for one user, in the order they arrived. */
const eventsFor = (receiver: FakeUpstream, externalId: string) =>
  receiver.requests.map(eventOf).filter((event) => event.profile.externalId === externalId)

const env = (extra: Record<string, string> = {}) => ({
  ADMIN_API_KEY: ADMIN,
  SERVICE_API_KEY: APP,
  WEBHOOK_ALLOW_PRIVATE_URLS: "true",
  WEBHOOK_RETRY_BASE_MS: "100",
  WEBHOOK_RETRY_MAX_MS: "1000",
  ...extra
})

const admin = { authorization: `Bearer ${ADMIN}` }

const subscribe = async (
  gw: { request: TestGateway["request"] },
  url: string,
  events: ReadonlyArray<string> = ALL_EVENTS,
  headers: Record<string, string> = admin
) => {
  const created = await gw.request<{ id: string; secret: string }>("POST", "/api/webhooks", {
    headers,
    json: { url, events }
  })
  expect(created.status).toBe(201)
  return created.body
}

describe("webhooks", () => {
  let up: FakeUpstream
  let gw: TestGateway
  beforeAll(async () => {
    up = await startFakeUpstream()
    gw = await startGateway(env({ UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-upstream" }))
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })
  // Each test's webhooks go with it (their deliveries too), so none hears of the next test's users.
  afterEach(async () => {
    await gw.query("DELETE FROM webhooks")
  })

  const call = <T>(method: string, path: string, json?: unknown, headers: Record<string, string> = admin) =>
    gw.request<T>(method, path, { headers, ...(json === undefined ? {} : { json }) })

  it("delivers every change once, in order, signed with the webhook's secret", async () => {
    const receiver = await startReceiver()
    const { id, secret } = await subscribe(gw, `${receiver.url}/hooks?app=1`)
    expect(secret).toMatch(/^whsec_/)
    const user = "hook-order"
    await call("POST", "/api/profiles", { externalId: user })
    const created = await call<{ memory: { id: string } }>("POST", `/api/profiles/${user}/memories`, {
      content: "Works as a nurse",
      type: "fact",
      tags: ["work"]
    })
    const memoryId = created.body.memory.id
    await call("PATCH", `/api/profiles/${user}/memories/${memoryId}`, { content: "Works as a night nurse" })
    await call("PUT", `/api/profiles/${user}/traits/language`, { value: "Portuguese" })
    await call("PATCH", `/api/profiles/${user}`, { summary: "A night nurse who speaks Portuguese." })
    const replacement = await call<{ memory: { id: string } }>("POST", `/api/profiles/${user}/memories`, {
      content: "Works as a surgeon",
      type: "fact",
      supersedes: [memoryId]
    })
    await call("DELETE", `/api/profiles/${user}/memories/${replacement.body.memory.id}`)
    await call("DELETE", `/api/profiles/${user}/traits/language`)

    const expected = [
      "memory.created",
      "memory.updated",
      "trait.changed",
      "summary.updated",
      "memory.created",
      "memory.superseded",
      "memory.deleted",
      // Deleting the successor makes the superseded memory current again.
      "memory.updated",
      "trait.changed"
    ]
    const events = await eventually(async () => {
      const got = eventsFor(receiver, user)
      return got.length >= expected.length ? got : undefined
    }, 15_000)
    expect(events.map((event) => event.type)).toEqual(expected)
    expect(new Set(events.map((event) => event.id)).size).toBe(expected.length)

    for (const request of receiver.requests.filter((r) => eventOf(r).profile.externalId === user)) {
      expect(request.method).toBe("POST")
      expect(request.path).toBe("/v1/hooks?app=1")
      expect(request.headers["content-type"]).toBe("application/json")
      const header = request.headers["x-service-signature"]
      expect(verifyWebhookSignature({ secret, header: String(header), body: request.rawBody })).toBe(true)
      // Any other secret, or the body changed by one character, does not verify.
      expect(verifyWebhookSignature({ secret: `${secret}x`, header: String(header), body: request.rawBody })).toBe(
        false
      )
      expect(verifyWebhookSignature({ secret, header: String(header), body: `${request.rawBody} ` })).toBe(false)
      expect(request.headers["x-service-event-id"]).toBe(eventOf(request).id)
    }

    const [first, updated, trait, summary] = events
    expect(first).toMatchObject({
      namespace: "default",
      profile: { externalId: user },
      data: { memory: { id: memoryId, content: "Works as a nurse", type: "fact", tags: ["work"], metadata: {} } }
    })
    expect(Date.parse(first!.createdAt)).not.toBeNaN()
    expect(updated!.data).toMatchObject({
      memory: { content: "Works as a night nurse" },
      previous: { content: "Works as a nurse" }
    })
    expect(trait!.data).toMatchObject({
      key: "language",
      trait: { value: "Portuguese", source: "manual" },
      previous: null
    })
    expect(summary!.data).toMatchObject({ summary: { text: "A night nurse who speaks Portuguese.", version: 1 } })
    expect(events[5]!.data).toMatchObject({ memory: { id: memoryId }, supersededBy: replacement.body.memory.id })
    expect(events[8]!.data).toMatchObject({ key: "language", trait: null, previous: { value: "Portuguese" } })

    // The deliveries are jobs: listed with the webhook and in /api/jobs. A delivery is marked succeeded once the
    // receiver's answer is read and its job's completion commits, just after the receiver saw the request.
    const mine = await eventually(async () => {
      const deliveries = await call<{ deliveries: Array<Delivery> }>("GET", `/api/webhooks/${id}/deliveries?limit=100`)
      const listed = deliveries.body.deliveries.filter((delivery) => delivery.profile.externalId === user)
      return listed.length === expected.length && listed.every((delivery) => delivery.status === "succeeded")
        ? listed
        : undefined
    }, 15_000)
    expect(mine.every((delivery) => delivery.responseStatus === 200)).toBe(true)
    const jobs = await call<{ jobs: Array<{ id: string; kind: string; webhookId: string | null }> }>(
      "GET",
      "/api/jobs?status=succeeded&limit=100"
    )
    expect(jobs.body.jobs.find((job) => job.id === mine[0]!.id)).toMatchObject({ kind: "webhook", webhookId: id })
    await receiver.close()
  })

  it("on erasure drops the profile's undelivered events and sends profile.erased", async () => {
    const receiver = await startReceiver()
    // Down: the first event waits for its retry, holding the profile's later ones behind it.
    receiver.handler = (request) =>
      eventOf(request).type === "profile.erased"
        ? { kind: "json", status: 204, body: null }
        : { kind: "text", status: 503, body: "down" }
    const { id } = await subscribe(gw, receiver.url)
    const user = "hook-erased"
    await call("POST", "/api/profiles", { externalId: user })
    await call("POST", `/api/profiles/${user}/memories`, { content: "Has a secret diary", type: "fact" })
    await call("POST", `/api/profiles/${user}/memories`, { content: "Lives in Lisbon", type: "fact" })
    await eventually(async () => (eventsFor(receiver, user).length > 0 ? true : undefined))
    expect((await call("DELETE", `/api/profiles/${user}`)).status).toBe(200)

    const erased = await eventually(async () =>
      eventsFor(receiver, user).find((event) => event.type === "profile.erased")
    )
    expect(erased).toMatchObject({ namespace: "default", profile: { externalId: user }, data: {} })
    const deliveries = await call<{ deliveries: Array<Delivery> }>("GET", `/api/webhooks/${id}/deliveries`)
    // What carried the erased user's data is gone; only the erasure itself remains.
    expect(deliveries.body.deliveries.map((delivery) => delivery.type)).toEqual(["profile.erased"])
    await receiver.close()
  })

  it("retries a failing receiver with growing delays, then succeeds; replays on request", async () => {
    const receiver = await startReceiver()
    let failures = 2
    const arrivals: Array<number> = []
    receiver.handler = () => {
      arrivals.push(performance.now())
      return failures-- > 0 ? { kind: "text", status: 500, body: "oops" } : { kind: "json", status: 200, body: {} }
    }
    const { id, secret } = await subscribe(gw, receiver.url, ["memory.created"])
    const user = "hook-retry"
    await call("POST", "/api/profiles", { externalId: user })
    await call("POST", `/api/profiles/${user}/memories`, { content: "Plays the cello", type: "fact" })

    const delivered = await eventually(async () => {
      const listed = await call<{ deliveries: Array<Delivery> }>("GET", `/api/webhooks/${id}/deliveries`)
      const delivery = listed.body.deliveries[0]
      return delivery?.status === "succeeded" ? delivery : undefined
    }, 15_000)
    expect(delivered).toMatchObject({ attempts: 3, responseStatus: 200, lastError: null })
    const attempts = receiver.requests.filter((request) => eventOf(request).profile.externalId === user)
    expect(attempts.map((request) => request.headers["x-service-delivery-attempt"])).toEqual(["1", "2", "3"])
    // Backoff: WEBHOOK_RETRY_BASE_MS (100) before the second attempt, twice that before the third, each ±20 %.
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(80)
    expect(arrivals[2]! - arrivals[1]!).toBeGreaterThanOrEqual(160)
    // Every attempt is the same event, signed anew.
    expect(new Set(attempts.map((request) => eventOf(request).id)).size).toBe(1)
    for (const request of attempts)
      expect(
        verifyWebhookSignature({
          secret,
          header: String(request.headers["x-service-signature"]),
          body: request.rawBody
        })
      ).toBe(true)

    // Operators see the failing receiver in the metrics.
    const metrics = await call<string>("GET", "/metrics")
    const count = (outcome: string) =>
      Number(
        metrics.text.match(
          new RegExp(`gateway_background_jobs_total\\{[^}]*line="webhook"[^}]*outcome="${outcome}"[^}]*\\} (\\d+)`)
        )?.[1] ?? 0
      )
    expect(count("retried")).toBeGreaterThanOrEqual(2)
    expect(count("succeeded")).toBeGreaterThanOrEqual(1)

    // Replay: the same event again, as a new delivery.
    const before = receiver.requests.length
    const replayed = await call<{ delivery: Delivery }>("POST", `/api/webhooks/${id}/deliveries/${delivered.id}/replay`)
    expect(replayed.status).toBe(202)
    expect(replayed.body.delivery).toMatchObject({ eventId: delivered.eventId, status: "pending", attempts: 0 })
    await eventually(async () => (receiver.requests.length > before ? true : undefined))
    expect(eventOf(receiver.requests[before]!).id).toBe(delivered.eventId)
    await receiver.close()
  })

  it("refuses to replay a delivery still pending (409) and answers 404 for unknown ones", async () => {
    const receiver = await startReceiver()
    receiver.handler = () => ({ kind: "hang" })
    const { id } = await subscribe(gw, receiver.url, ["memory.created"])
    await call("POST", "/api/profiles", { externalId: "hook-pending" })
    await call("POST", "/api/profiles/hook-pending/memories", { content: "Owns a boat", type: "fact" })
    const pending = await eventually(async () => {
      const listed = await call<{ deliveries: Array<Delivery> }>("GET", `/api/webhooks/${id}/deliveries`)
      return listed.body.deliveries[0]
    })
    expectError(await call("POST", `/api/webhooks/${id}/deliveries/${pending.id}/replay`), 409, "delivery_not_finished")
    expectError(
      await call("POST", `/api/webhooks/${id}/deliveries/00000000-0000-4000-8000-000000000000/replay`),
      404,
      "delivery_not_found"
    )
    expectError(await call("GET", "/api/webhooks/not-a-uuid"), 404, "webhook_not_found")
    expect((await call("DELETE", `/api/webhooks/${id}`)).status).toBe(200)
    expectError(await call("GET", `/api/webhooks/${id}`), 404, "webhook_not_found")
    await receiver.close()
  })

  it("lists a delivery among the jobs with the user its event is about and the webhook it goes to", async () => {
    const receiver = await startReceiver()
    receiver.handler = () => ({ kind: "hang" })
    const { id } = await subscribe(gw, receiver.url, ["memory.created"])
    await call("POST", "/api/profiles", { externalId: "hook-listed" })
    await call("POST", "/api/profiles/hook-listed/memories", { content: "Keeps bees", type: "fact" })
    await receiver.received(() => true)
    const listed = await call<{ jobs: Array<Record<string, unknown>> }>("GET", "/api/jobs?status=running")
    const delivery = listed.body.jobs.find((job) => job["kind"] === "webhook" && job["webhookId"] === id)
    expect(delivery).toMatchObject({ externalId: "hook-listed", webhookId: id, profileId: null })
    await receiver.close()
  })

  it("never holds up a completion, even while a receiver hangs", async () => {
    const receiver = await startReceiver()
    receiver.handler = () => ({ kind: "hang" })
    await subscribe(gw, receiver.url)
    await call("POST", "/api/profiles", { externalId: "hook-busy" })
    await call("POST", "/api/profiles/hook-busy/memories", { content: "Likes jazz", type: "preference" })
    await receiver.received(() => true)
    up.enqueue({ kind: "json", status: 200, body: completion({ content: "Sure." }) })
    const answer = await gw.request<{ choices: Array<{ message: { content: string } }> }>(
      "POST",
      "/v1/chat/completions",
      {
        headers: { authorization: `Bearer ${APP}`, "x-service-id": "hook-busy" },
        json: { model: "gpt-test", messages: [{ role: "user", content: "Any music tips?" }] }
      }
    )
    expect(answer.status).toBe(200)
    expect(answer.body.choices[0]!.message.content).toBe("Sure.")
    await receiver.close()
  })

  it("checks the URL and the events, and stores nothing it refuses", async () => {
    const strict = await startGateway({ ADMIN_API_KEY: ADMIN })
    try {
      const refuse = async (json: unknown, status: number, code: string) => {
        expectError(await strict.request("POST", "/api/webhooks", { headers: admin, json }), status, code)
      }
      await refuse({ url: "http://127.0.0.1:9/hook", events: ["memory.created"] }, 400, "webhook_url_not_allowed")
      await refuse({ url: "http://[::1]:9/hook", events: ["memory.created"] }, 400, "webhook_url_not_allowed")
      await refuse({ url: "http://169.254.169.254/latest", events: ["memory.created"] }, 400, "webhook_url_not_allowed")
      await refuse({ url: "http://localhost:9/hook", events: ["memory.created"] }, 400, "webhook_url_not_allowed")
      // IPv6 forms that lead to a loopback or private IPv4 address, or stay on the local network.
      for (const host of [
        "[::127.0.0.1]", // IPv4-compatible
        "[::7f00:1]",
        "[::ffff:127.0.0.1]", // IPv4-mapped
        "[::ffff:0:7f00:1]", // SIIT
        "[64:ff9b::a9fe:a9fe]", // NAT64 to 169.254.169.254
        "[64:ff9b:1::a00:1]", // local-use NAT64
        "[2002:7f00:1::]", // 6to4 via 127.0.0.1
        "[2001:0:4136:e378:8000:63bf:80ff:fffe]", // Teredo, client 127.0.0.1
        "[2001:0:a00:1:8000:63bf:f7f7:fbfb]", // Teredo, server 10.0.0.1
        "[fec0::1]", // site-local
        "[fd12:3456::1]" // unique-local
      ])
        await refuse({ url: `http://${host}:9/hook`, events: ["memory.created"] }, 400, "webhook_url_not_allowed")
      await refuse({ url: "ftp://example.com/hook", events: ["memory.created"] }, 400, "invalid_url")
      await refuse({ url: "https://user:pw@example.com/hook", events: ["memory.created"] }, 400, "invalid_url")
      await refuse({ url: "not a url", events: ["memory.created"] }, 400, "invalid_url")
      await refuse({ url: "https://example.com/hook", events: ["memory.exploded"] }, 400, "invalid_events")
      await refuse({ url: "https://example.com/hook", events: [] }, 400, "invalid_events")
      await refuse(
        { url: "https://example.com/hook", events: ["memory.created"], namespace: "Bad Name" },
        400,
        "invalid_namespace"
      )
      const [row] = await strict.query<{ count: number }>("SELECT count(*)::int AS count FROM webhooks")
      expect(row?.count).toBe(0)
      // A translator's form of a public IPv4 address is that address.
      const sixToFour = await strict.request("POST", "/api/webhooks", {
        headers: admin,
        json: { url: "https://[2002:808:808::1]/hook", events: ["memory.created"] }
      })
      expect(sixToFour.status).toBe(201)
    } finally {
      await strict.close()
    }
  })

  it("keeps each namespace's webhooks and events to itself", async () => {
    const receiverA = await startReceiver()
    const receiverB = await startReceiver()
    const keyFor = async (namespace: string, scope: string) =>
      (await call<{ key: string }>("POST", "/api/keys", { namespace, scope })).body.key
    const adminA = { authorization: `Bearer ${await keyFor("hooks-a", "admin")}` }
    const adminB = { authorization: `Bearer ${await keyFor("hooks-b", "admin")}` }
    const hookA = await subscribe(gw, receiverA.url, ["memory.created"], adminA)
    await subscribe(gw, receiverB.url, ["memory.created"], adminB)
    expectError(
      await call(
        "POST",
        "/api/webhooks",
        { url: receiverA.url, events: ["memory.created"], namespace: "hooks-b" },
        adminA
      ),
      403,
      "namespace_not_allowed"
    )

    // The same user id in both namespaces.
    for (const [headers, content] of [
      [adminA, "Alice of A likes tea"],
      [adminB, "Alice of B likes coffee"]
    ] as const) {
      await call("POST", "/api/profiles", { externalId: "alice" }, headers)
      await call("POST", "/api/profiles/alice/memories", { content, type: "preference" }, headers)
    }
    const [a] = await eventually(async () =>
      receiverA.requests.length > 0 ? receiverA.requests.map(eventOf) : undefined
    )
    const [b] = await eventually(async () =>
      receiverB.requests.length > 0 ? receiverB.requests.map(eventOf) : undefined
    )
    expect(a).toMatchObject({ namespace: "hooks-a", data: { memory: { content: "Alice of A likes tea" } } })
    expect(b).toMatchObject({ namespace: "hooks-b", data: { memory: { content: "Alice of B likes coffee" } } })

    const seenByB = await call<{ webhooks: Array<{ id: string; namespace: string }> }>(
      "GET",
      "/api/webhooks",
      undefined,
      adminB
    )
    expect(seenByB.body.webhooks.map((webhook) => webhook.namespace)).toEqual(["hooks-b"])
    expectError(await call("GET", `/api/webhooks/${hookA.id}`, undefined, adminB), 404, "webhook_not_found")
    expectError(await call("GET", `/api/webhooks/${hookA.id}/deliveries`, undefined, adminB), 404, "webhook_not_found")
    expectError(await call("DELETE", `/api/webhooks/${hookA.id}`, undefined, adminB), 404, "webhook_not_found")
    const jobsOfB = await call<{ jobs: Array<{ webhookId: string | null }> }>(
      "GET",
      "/api/jobs?status=succeeded&limit=100",
      undefined,
      adminB
    )
    expect(jobsOfB.body.jobs.some((job) => job.webhookId === hookA.id)).toBe(false)
    await receiverA.close()
    await receiverB.close()
  })
})

describe("a receiver that never answers", () => {
  it("holds one delivery loop: other webhooks' deliveries still go, in order", async () => {
    // Long enough that the held delivery is still in flight when the test ends (closing the receiver ends it).
    const gw = await startGateway(env({ WEBHOOK_CONCURRENCY: "2", WEBHOOK_TIMEOUT_MS: "120000" }))
    const dead = await startReceiver()
    dead.handler = () => ({ kind: "hang" })
    const healthy = await startReceiver()
    const inNamespace = (namespace: string) => ({ ...admin, "x-service-namespace": namespace })
    const remember = async (namespace: string, user: string, contents: ReadonlyArray<string>) => {
      await gw.request("POST", "/api/profiles", { headers: inNamespace(namespace), json: { externalId: user } })
      for (const content of contents)
        await gw.request("POST", `/api/profiles/${user}/memories`, {
          headers: inNamespace(namespace),
          json: { content, type: "fact" }
        })
    }
    try {
      const deadHook = await subscribe(gw, dead.url, ["memory.created"], inNamespace("hooks-dead"))
      await subscribe(gw, healthy.url, ["memory.created"], inNamespace("hooks-alive"))
      // Four users' events: four lines of the dead webhook, enough to hold both loops.
      for (const user of ["d1", "d2", "d3", "d4"]) await remember("hooks-dead", user, [`${user} keeps bees`])
      await dead.received(() => true)

      const users = ["h1", "h2", "h3"]
      for (const user of users) await remember("hooks-alive", user, [`${user} first`, `${user} second`])
      const arrived = await eventually(async () =>
        healthy.requests.length >= 6 ? healthy.requests.map(eventOf) : undefined
      )
      for (const user of users)
        expect(
          arrived
            .filter((event) => event.profile.externalId === user)
            .map((event) => (event.data["memory"] as { content: string }).content)
        ).toEqual([`${user} first`, `${user} second`])

      // Meanwhile the dead receiver held its first delivery, and was sent no other.
      expect(dead.requests.map((request) => request.aborted)).toEqual([false])
      const deliveries = await gw.query<{ status: string; count: number }>(
        "SELECT status, count(*)::int AS count FROM extraction_jobs WHERE webhook_id = $1 GROUP BY status ORDER BY status",
        [deadHook.id]
      )
      expect(deliveries).toEqual([
        { status: "pending", count: 3 },
        { status: "running", count: 1 }
      ])
    } finally {
      // The receiver first: its sockets closed, the held delivery ends, and the gateway stops without waiting for it.
      await dead.close()
      await healthy.close()
      await gw.close()
    }
  })
})

describe("webhooks and the extraction worker", () => {
  it("sends extraction.failed when a job fails for good", async () => {
    const up = await startFakeUpstream()
    const model = await startFakeUpstream()
    model.handler = () => ({ kind: "text", status: 500, body: "model down" }) satisfies Reply
    const gw = await startGateway(
      env({
        UPSTREAM_BASE_URL: up.url,
        UPSTREAM_API_KEY: "sk-upstream",
        EXTRACTION_BASE_URL: model.url,
        EXTRACTION_API_KEY: "sk-extraction",
        EXTRACTION_CONCURRENCY: "1",
        EXTRACTION_MAX_ATTEMPTS: "1"
      })
    )
    const receiver = await startReceiver()
    try {
      await subscribe(gw, receiver.url, ["extraction.failed"])
      up.enqueue({ kind: "json", status: 200, body: completion({ content: "Hello!" }) })
      const answer = await gw.request("POST", "/v1/chat/completions", {
        headers: { authorization: `Bearer ${APP}`, "x-service-id": "hook-failing" },
        json: { model: "gpt-test", messages: [{ role: "user", content: "I am a pilot" }] }
      })
      expect(answer.status).toBe(200)
      const [event] = await eventually(
        async () => (receiver.requests.length > 0 ? receiver.requests.map(eventOf) : undefined),
        15_000
      )
      expect(event).toMatchObject({
        type: "extraction.failed",
        profile: { externalId: "hook-failing" },
        data: { job: { kind: "turn", attempts: 1 } }
      })
      expect(String((event!.data["job"] as { error: string }).error)).toContain("500")
    } finally {
      await gw.close()
      await receiver.close()
      await model.close()
      await up.close()
    }
  })
})

describe("webhooks across a restart", () => {
  it("delivers every event after the gateway is killed in the middle of a delivery", async () => {
    const receiver = await startReceiver()
    let held = true
    // The first delivery is held open until the gateway delivering it is gone.
    receiver.handler = () => (held ? { kind: "hang" } : { kind: "json", status: 200, body: {} })
    const first = await startGateway(env({ WEBHOOK_CONCURRENCY: "0" }))
    const { secret } = await subscribe(first, receiver.url)
    const port = await freePort()
    const killed = spawnService({
      ...env({ WEBHOOK_LEASE_MS: "1000" }),
      PORT: String(port),
      DATABASE_URL: first.databaseUrl,
      LOG_LEVEL: "error",
      EXTRACTION_CONCURRENCY: "0",
      EMBEDDINGS: "off"
    })
    try {
      await waitUntilHealthy(killed)
      const user = "hook-restart"
      await first.request("POST", "/api/profiles", { headers: admin, json: { externalId: user } })
      for (const content of ["Speaks Greek", "Collects stamps", "Runs marathons"])
        await first.request("POST", `/api/profiles/${user}/memories`, {
          headers: admin,
          json: { content, type: "fact" }
        })
      await receiver.received(() => true)
      killed.child.kill("SIGKILL")
      await killed.exited
      held = false

      // Another gateway takes the delivery over once the dead one's lease runs out.
      const second = await startGateway(env({ WEBHOOK_LEASE_MS: "1000" }), { databaseUrl: first.databaseUrl })
      try {
        const events = await eventually(async () => {
          const got = eventsFor(receiver, user)
          return new Set(got.map((event) => event.id)).size >= 3 ? got : undefined
        }, 20_000)
        const firstArrivals = [...new Map(events.map((event) => [event.id, event])).values()]
        expect(firstArrivals.map((event) => (event.data["memory"] as { content: string }).content)).toEqual([
          "Speaks Greek",
          "Collects stamps",
          "Runs marathons"
        ])
        // Only the delivery cut short by the kill may come twice (at least once); none other repeats.
        const repeats = events.length - firstArrivals.length
        expect(repeats).toBeLessThanOrEqual(1)
        if (repeats === 1) expect(events[0]!.id).toBe(events[1]!.id)
        for (const request of receiver.requests)
          expect(
            verifyWebhookSignature({
              secret,
              header: String(request.headers["x-service-signature"]),
              body: request.rawBody
            })
          ).toBe(true)
      } finally {
        await second.close()
      }
    } finally {
      if (killed.child.exitCode === null) killed.child.kill("SIGKILL")
      await first.close()
      await receiver.close()
    }
  })
})
