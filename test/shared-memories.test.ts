import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { injectedText } from "./support/injected.ts"
import { expectError, type MemoryJson } from "./support/wire.ts"

const ADMIN = "sk-admin-shared-0123456789"
const APP = "sk-app-shared-0123456789"
const SHARED_SECTION = "What this app knows:"

interface Receipt {
  readonly profileId: string
  readonly memories: ReadonlyArray<string>
  readonly sharedMemories: ReadonlyArray<string>
}

const receiptOf = (response: globalThis.Response) =>
  JSON.parse(response.headers.get("x-service-context") ?? "null") as Receipt

/**
 * What an app knows for all its users: memories of a namespace rather than of a user, written through
 * `/api/namespaces/{name}/memories…` and injected, where relevant, for every user of that namespace.
 */
describe("a namespace's shared memories", () => {
  let up: FakeUpstream
  let receiver: FakeUpstream
  let gw: TestGateway
  /** Another replica on the same database. */
  let replica: TestGateway
  const keys: Record<string, string> = {}

  beforeAll(async () => {
    up = await startFakeUpstream()
    receiver = await startFakeUpstream()
    receiver.handler = () => ({ kind: "json", status: 200, body: { ok: true } })
    const env = {
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-upstream",
      ADMIN_API_KEY: ADMIN,
      SERVICE_API_KEY: APP,
      WEBHOOK_ALLOW_PRIVATE_URLS: "true"
    }
    gw = await startGateway(env)
    replica = await startGateway(env, { databaseUrl: gw.databaseUrl })
    for (const namespace of ["shop", "other"]) {
      for (const scope of ["app", "admin"] as const) {
        const created = await admin<{ key: string }>("POST", "/api/keys", { namespace, scope })
        expect(created.status).toBe(201)
        keys[`${namespace}-${scope}`] = created.body.key
      }
    }
  })
  afterAll(async () => {
    await replica.close()
    await gw.close()
    await receiver.close()
    await up.close()
  })
  beforeEach(() => up.reset())

  const as = <T>(key: string, method: string, path: string, json?: unknown, on: TestGateway = gw) =>
    on.request<T>(method, path, {
      headers: { authorization: `Bearer ${key}` },
      ...(json === undefined ? {} : { json })
    })
  const admin = <T>(method: string, path: string, json?: unknown) => as<T>(ADMIN, method, path, json)

  const addShared = async (namespace: string, json: unknown, key = ADMIN) => {
    const created = await as<{ memory: MemoryJson }>(key, "POST", `/api/namespaces/${namespace}/memories`, json)
    expect(created.status).toBe(201)
    return created.body.memory
  }

  /** A chat completion of a user of the namespace the key serves: what the provider got, and the receipt. */
  const chat = async (
    key: string,
    user: string,
    content: string,
    options: { readonly service?: unknown; readonly on?: TestGateway } = {}
  ) => {
    const on = options.on ?? gw
    const client = new OpenAI({
      baseURL: `${on.baseUrl}/v1`,
      apiKey: key,
      maxRetries: 0,
      defaultHeaders: { "x-service-id": user }
    })
    const body = {
      model: "gpt-test",
      messages: [{ role: "user" as const, content }],
      ...(options.service === undefined ? {} : { service: options.service })
    }
    const { response } = await client.chat.completions.create(body).withResponse()
    const sent = up.requests.filter((request) => request.path.endsWith("/chat/completions")).at(-1)
    return { injected: injectedText(sent!.body), receipt: receiptOf(response) }
  }

  const QUESTION = "How long is the warranty on the Aurora kettle?"

  it("injects a relevant shared memory for every user of its namespace, in its own section, and for nobody else", async () => {
    // Before the namespace knows anything: nothing shared (and its absence is now cached).
    const before = await chat(keys["shop-app"]!, "alice", QUESTION)
    expect(before.injected).not.toContain(SHARED_SECTION)
    expect(before.receipt.sharedMemories).toEqual([])

    const kettle = await addShared("shop", { content: "The Aurora kettle has a two-year warranty", type: "fact" })
    const hours = await addShared("shop", { content: "Stores open at nine on Sundays", type: "fact" })

    for (const user of ["alice", "bob"]) {
      const { injected, receipt } = await chat(keys["shop-app"]!, user, QUESTION)
      expect(injected).toContain(`${SHARED_SECTION}\n- (fact) The Aurora kettle has a two-year warranty`)
      // Irrelevant to the message: left out.
      expect(injected).not.toContain("Sundays")
      expect(receipt.sharedMemories).toEqual([kettle.id])
      expect(receipt.memories).toEqual([])
    }
    expect(hours.id).not.toBe(kettle.id)

    // Another namespace's users, and the environment's key (`default`), get none of it.
    for (const key of [keys["other-app"]!, APP]) {
      const { injected, receipt } = await chat(key, "alice", QUESTION)
      expect(injected).not.toContain("Aurora")
      expect(receipt.sharedMemories).toEqual([])
    }

    // Nothing relevant: nothing shared goes.
    const unrelated = await chat(keys["shop-app"]!, "alice", "Write me a haiku about autumn leaves")
    expect(unrelated.injected).not.toContain(SHARED_SECTION)
    expect(unrelated.receipt.sharedMemories).toEqual([])
  })

  it("keeps the user's own memories apart from the shared ones, and leaves the shared ones out on request", async () => {
    const own = await as<{ memory: MemoryJson }>(keys["shop-admin"]!, "POST", "/api/profiles/carol/memories", {
      content: "Carol bought an Aurora kettle in May",
      type: "event"
    })
    expect(own.status).toBe(201)
    const kettleId = (
      await admin<{ memories: Array<MemoryJson> }>("POST", "/api/namespaces/shop/memories/search", { query: "Aurora" })
    ).body.memories[0]!.id

    const both = await chat(keys["shop-app"]!, "carol", QUESTION)
    expect(both.receipt.memories).toEqual([own.body.memory.id])
    expect(both.receipt.sharedMemories).toEqual([kettleId])
    // An event without its date: shown as of the day it was remembered.
    const userSection = both.injected.indexOf(
      `Memories:\n- (event, as of ${own.body.memory.createdAt.slice(0, 10)}) Carol bought an Aurora kettle in May`
    )
    const sharedSection = both.injected.indexOf(`${SHARED_SECTION}\n- (fact) The Aurora kettle has a two-year warranty`)
    expect(userSection).toBeGreaterThan(-1)
    // The user's own profile first.
    expect(sharedSection).toBeGreaterThan(userSection)

    const without = await chat(keys["shop-app"]!, "carol", QUESTION, { service: { sharedMemories: false } })
    expect(without.injected).toContain("Carol bought an Aurora kettle")
    expect(without.injected).not.toContain(SHARED_SECTION)
    expect(without.receipt.sharedMemories).toEqual([])
    expectError(
      await gw.request("POST", "/v1/chat/completions", {
        headers: { authorization: `Bearer ${keys["shop-app"]}`, "x-service-id": "carol" },
        json: { model: "gpt-test", messages: [{ role: "user", content: "hi" }], service: { sharedMemories: "no" } }
      }),
      400,
      "invalid_service_options"
    )

    // The preview shows what a request would get.
    const preview = await as<{ context: string; receipt: Receipt }>(
      keys["shop-admin"]!,
      "POST",
      "/api/profiles/carol/preview",
      { message: QUESTION }
    )
    expect(preview.status).toBe(200)
    expect(preview.body.context).toContain(`${SHARED_SECTION}\n- (fact) The Aurora kettle has a two-year warranty`)
    expect(preview.body.receipt.sharedMemories).toEqual([kettleId])
  })

  it("never shows the shared profile as a user: not listed, counted, found, exported or erased with one", async () => {
    const [shared] = await gw.query<{ id: string }>("SELECT id FROM profiles WHERE namespace = 'shop' AND shared")
    expect(shared).toBeDefined()
    const listed = await as<{ profiles: Array<{ externalId: string }>; total: number }>(
      keys["shop-admin"]!,
      "GET",
      "/api/profiles"
    )
    expect(listed.body.profiles.map((profile) => profile.externalId).sort()).toEqual(["alice", "bob", "carol"])
    expect(listed.body.total).toBe(3)
    const everywhere = await admin<{ profiles: Array<{ id: string }> }>("GET", "/api/profiles?limit=100")
    expect(everywhere.body.profiles.map((profile) => profile.id)).not.toContain(shared!.id)
    const namespaces = await admin<{ namespaces: Array<{ name: string; profiles: number }> }>("GET", "/api/namespaces")
    expect(namespaces.body.namespaces.find((namespace) => namespace.name === "shop")?.profiles).toBe(3)
    expectError(await as(keys["shop-admin"]!, "GET", `/api/profiles/${shared!.id}`), 404, "profile_not_found")
    expectError(await admin("GET", `/api/profiles/${shared!.id}`), 404, "profile_not_found")
    expectError(await as(keys["shop-admin"]!, "GET", "/api/profiles/%01shared"), 400, "invalid_profile_id")
    // The jobs it has (its memories' cues) are listed with the namespace's.
    expect((await as(keys["shop-admin"]!, "GET", "/api/jobs")).status).toBe(200)

    // A user's export holds their memories only, and their erasure leaves the namespace's.
    const exported = await as<Record<string, unknown>>(keys["shop-admin"]!, "GET", "/api/profiles/carol/export")
    expect(exported.status).toBe(200)
    expect(exported.text).toContain("Carol bought an Aurora kettle")
    expect(exported.text).not.toContain("two-year warranty")
    expect((await as(keys["shop-admin"]!, "DELETE", "/api/profiles/carol")).status).toBe(200)
    const left = await admin<{ total: number }>("GET", "/api/namespaces/shop/memories")
    expect(left.body.total).toBe(2)
  })

  it("is managed by the global admin anywhere and by a namespace's admin key in its own namespace only", async () => {
    const before = await gw.counts()
    for (const [key, namespace, status, code] of [
      [keys["shop-admin"]!, "other", 403, "namespace_not_allowed"],
      [keys["shop-admin"]!, "Not%20A%20Namespace", 403, "namespace_not_allowed"],
      [keys["shop-app"]!, "shop", 403, "insufficient_scope"],
      [APP, "shop", 403, "insufficient_scope"],
      [ADMIN, "Not%20A%20Namespace", 400, "invalid_namespace"]
    ] as const) {
      const path = `/api/namespaces/${namespace}/memories`
      expectError(await as(key, "POST", path, { content: "Ships worldwide", type: "fact" }), status, code)
      expectError(await as(key, "GET", path), status, code)
      expectError(await as(key, "POST", `${path}/search`, { query: "ships" }), status, code)
      expectError(await as(key, "POST", `${path}/import`, { memories: [{ content: "x", type: "fact" }] }), status, code)
    }
    // Bad input: an OpenAI-shaped 400, nothing stored.
    for (const [json, code] of [
      [{ type: "fact" }, "missing_content"],
      [{ content: "   ", type: "fact" }, "invalid_content"],
      [{ content: "x", type: "opinion" }, "invalid_type"],
      [{ content: "x", type: "fact", importance: 2 }, "invalid_importance"],
      [{ content: "x", type: "fact", supersedes: ["00000000-0000-4000-8000-000000000000"] }, "invalid_supersedes"]
    ] as const) {
      expectError(await admin("POST", "/api/namespaces/fresh/memories", json), 400, code)
    }
    expect(await gw.counts()).toEqual(before)

    // A namespace's admin key writes its own namespace's.
    await addShared("other", { content: "Other ships worldwide", type: "fact" }, keys["other-admin"])
    expect(
      (await as<{ total: number }>(keys["other-admin"]!, "GET", "/api/namespaces/other/memories")).body.total
    ).toBe(1)
  })

  it("lists, reads, edits, imports, ranks and deletes shared memories as a user's memories are", async () => {
    const base = "/api/namespaces/catalogue/memories"
    // A namespace without any: none listed, none found, none ranked, and no profile made.
    const profilesBefore = (await gw.counts()).profiles
    expect((await admin("GET", base)).body).toEqual({ memories: [], total: 0 })
    const emptySearch = await admin<{ memories: Array<unknown> }>("POST", `${base}/search`, { query: "kettle" })
    expect(emptySearch.status).toBe(200)
    expect(emptySearch.body.memories).toEqual([])
    const ghost = "00000000-0000-4000-8000-000000000000"
    expectError(await admin("GET", `${base}/${ghost}`), 404, "memory_not_found")
    expectError(await admin("PATCH", `${base}/${ghost}`, { importance: 0.1 }), 404, "memory_not_found")
    expectError(await admin("DELETE", `${base}/${ghost}`), 404, "memory_not_found")
    expect((await gw.counts()).profiles).toBe(profilesBefore)

    const kettle = await addShared("catalogue", {
      content: "The Aurora kettle boils a litre in three minutes",
      type: "fact",
      importance: 0.9,
      tags: ["kettles"]
    })
    const again = await admin<{ memory: MemoryJson }>("POST", base, {
      content: "the aurora KETTLE boils a litre in three   minutes",
      type: "fact"
    })
    expect(again.status).toBe(200)
    expect(again.body.memory.id).toBe(kettle.id)
    expect((await admin<{ memory: MemoryJson }>("GET", `${base}/${kettle.id}`)).body.memory).toMatchObject({
      id: kettle.id,
      content: "The Aurora kettle boils a litre in three minutes",
      importance: 0.9
    })
    expectError(await admin("GET", `${base}/not-a-uuid`), 404, "memory_not_found")

    const edited = await admin<{ memory: MemoryJson }>("PATCH", `${base}/${kettle.id}`, {
      content: "The Aurora kettle boils a litre in two minutes"
    })
    expect(edited.status).toBe(200)
    expect(edited.body.memory.content).toBe("The Aurora kettle boils a litre in two minutes")
    expectError(await admin("PATCH", `${base}/${kettle.id}`, {}), 400, "invalid_request_body")

    const imported = await admin<{ memories: Array<MemoryJson>; duplicates: number }>("POST", `${base}/import`, {
      memories: [
        { content: "The Borealis toaster has four slots", type: "fact" },
        { content: "The Aurora kettle boils a litre in two minutes", type: "fact" },
        { content: "Returns are free within 30 days", type: "fact", createdAt: "2024-01-02T03:04:05Z" }
      ]
    })
    expect(imported.status).toBe(201)
    expect(imported.body.memories.map((memory) => memory.content)).toEqual([
      "The Borealis toaster has four slots",
      "Returns are free within 30 days"
    ])
    expect(imported.body.duplicates).toBe(1)
    const listed = await admin<{ memories: Array<MemoryJson>; total: number }>("GET", `${base}?limit=2`)
    expect(listed.body.total).toBe(3)
    expect(listed.body.memories).toHaveLength(2)
    expect(listed.body.memories[0]!.id).toBe(kettle.id)
    expect((await admin<{ total: number }>("GET", `${base}?type=event`)).body.total).toBe(0)

    const found = await admin<{ memories: Array<MemoryJson & { relevant: boolean; score: number }> }>(
      "POST",
      `${base}/search`,
      { query: "How fast does the Aurora kettle boil?", limit: 2 }
    )
    expect(found.status).toBe(200)
    expect(found.body.memories).toHaveLength(2)
    expect(found.body.memories[0]).toMatchObject({ id: kettle.id, relevant: true })

    expect((await admin("DELETE", `${base}/${kettle.id}`)).body).toEqual({ success: true })
    expectError(await admin("GET", `${base}/${kettle.id}`), 404, "memory_not_found")
    expectError(await admin("DELETE", `${base}/${kettle.id}`), 404, "memory_not_found")
    expect((await admin<{ total: number }>("GET", base)).body.total).toBe(2)
  })

  it("reaches the other replicas once the namespace's shared profile is created", async () => {
    const question = "Which loyalty card gives double points?"
    // The replica learns that `default` has no shared knowledge, and caches that.
    const before = await chat(APP, "dora", question, { on: replica })
    expect(before.receipt.sharedMemories).toEqual([])
    const card = await addShared("default", { content: "The Gold loyalty card gives double points", type: "fact" })
    const after = await eventually(async () => {
      const sent = await chat(APP, "dora", question, { on: replica })
      return sent.receipt.sharedMemories.length > 0 ? sent : undefined
    })
    expect(after.receipt.sharedMemories).toEqual([card.id])
    expect(after.injected).toContain("The Gold loyalty card gives double points")
  })

  it("announces its changes to the namespace's webhooks, naming the shared profile", async () => {
    const subscribed = await as<{ id: string }>(keys["other-admin"]!, "POST", "/api/webhooks", {
      url: receiver.url,
      events: ["memory.created"]
    })
    expect(subscribed.status).toBe(201)
    const memory = await addShared("other", { content: "Gift wrapping is free", type: "fact" }, keys["other-admin"])
    const event = await eventually(async () =>
      receiver.requests
        .map(
          (request) =>
            JSON.parse(request.rawBody) as { data: { memory: { id: string } }; profile: { externalId: string } }
        )
        .find((sent) => sent.data.memory.id === memory.id)
    )
    expect(event.profile.externalId).toBe("\u0001shared")
  })
})

describe("a namespace's shared memories, with embeddings", () => {
  let up: FakeUpstream
  let gw: TestGateway
  beforeAll(async () => {
    up = await startFakeUpstream()
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-upstream",
      EMBEDDINGS: "provider",
      EMBEDDING_BASE_URL: up.url,
      EMBEDDING_MODEL: "embed-test",
      EMBEDDING_API_KEY: "sk-embeddings"
    })
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  it("embeds them in the background, ranks them by vector too, and counts that work as the namespace's", async () => {
    const add = (content: string) =>
      gw.request<{ memory: MemoryJson }>("POST", "/api/namespaces/default/memories", {
        json: { content, type: "fact" }
      })
    const kettle = (await add("The Aurora kettle has a two-year warranty")).body.memory
    await add("Stores open at nine on Sundays")
    const embedded = await eventually(async () => {
      const jobs = await gw.request<{ jobs: Array<{ kind: string; result: { embedded: number } | null }> }>(
        "GET",
        "/api/jobs?status=succeeded&limit=100"
      )
      const done = jobs.body.jobs.filter((job) => job.kind === "embed")
      return done.reduce((sum, job) => sum + (job.result?.embedded ?? 0), 0) >= 2 ? done : undefined
    }, 20_000)
    expect(embedded.length).toBeGreaterThan(0)

    const client = new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "x-service-id": "erin" }
    })
    const { response } = await client.chat.completions
      .create({ model: "gpt-test", messages: [{ role: "user", content: "Is my Aurora kettle still under warranty?" }] })
      .withResponse()
    expect(receiptOf(response).sharedMemories).toEqual([kettle.id])
    const sent = up.requests.filter((request) => request.path.endsWith("/chat/completions")).at(-1)
    const injected = injectedText(sent!.body)
    expect(injected).toContain("The Aurora kettle has a two-year warranty")
    expect(injected).not.toContain("Sundays")

    // The shared memories' embeddings are nobody's: no user is the shared profile in the usage reports.
    type Row = { group: string | null; memoryWorkCalls: number }
    const perUser = await eventually(async () => {
      const seen = await gw.request<{ usage: Array<Row> }>("GET", "/api/usage?groupBy=user")
      // The memories' embedding and the message's.
      const calls = seen.body.usage.reduce((sum, row) => sum + row.memoryWorkCalls, 0)
      return calls >= 2 ? seen.body.usage : undefined
    })
    expect(perUser.map((row) => row.group)).not.toContain("\u0001shared")
    expect(perUser.map((row) => row.group)).toContain(null)
  })
})
