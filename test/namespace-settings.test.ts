import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { injectedText } from "./support/injected.ts"
import { expectError } from "./support/wire.ts"

const ADMIN = "sk-admin-settings-0123456789"

interface Settings {
  readonly namespace: string
  readonly extractionInstructions: string
  readonly memoryCategories: ReadonlyArray<{ readonly name: string; readonly description: string }>
  readonly traitSchema: Record<string, unknown> | null
  readonly retention: { readonly turnsDays?: number; readonly memoryDays?: Record<string, number> }
  readonly lastSweep: unknown
  readonly updatedAt: string | null
}

interface MemoryJson {
  readonly id: string
  readonly content: string
  readonly category: string | null
  readonly source: string
  readonly createdAt: string
  readonly expiresAt: string | null
}

const DAY_MS = 86_400_000

describe("a namespace's settings", () => {
  let up: FakeUpstream
  let gw: TestGateway
  beforeAll(async () => {
    up = await startFakeUpstream()
    gw = await startGateway({ UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-up", ADMIN_API_KEY: ADMIN })
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  const as = <T>(key: string, method: string, path: string, json?: unknown, namespace?: string) =>
    gw.request<T>(method, path, {
      headers: {
        authorization: `Bearer ${key}`,
        ...(namespace === undefined ? {} : { "x-service-namespace": namespace })
      },
      ...(json === undefined ? {} : { json })
    })
  const admin = <T>(method: string, path: string, json?: unknown, namespace?: string) =>
    as<T>(ADMIN, method, path, json, namespace)

  const storedRows = async () =>
    (await gw.query<{ n: number }>("SELECT count(*)::int AS n FROM namespace_settings"))[0]!.n

  it("answers the defaults, then what was set; PATCH changes only the fields given", async () => {
    const initial = await admin<Settings>("GET", "/api/namespaces/shop/settings")
    expect(initial.status).toBe(200)
    expect(initial.body).toEqual({
      namespace: "shop",
      extractionInstructions: "",
      memoryCategories: [],
      traitSchema: null,
      retention: {},
      lastSweep: null,
      updatedAt: null
    })

    const put = await admin<Settings>("PUT", "/api/namespaces/shop/settings", {
      extractionInstructions: "Note every product the user owns, with its model number.",
      memoryCategories: [
        { name: "product", description: "Products the user owns or wants" },
        { name: "support", description: "Problems the user had and how they were solved" }
      ],
      traitSchema: { plan: { type: "enum", enum: ["free", "pro"], description: "The user's plan" } },
      retention: { turnsDays: 30, memoryDays: { event: 90 } }
    })
    expect(put.status).toBe(200)
    expect(put.body).toMatchObject({
      namespace: "shop",
      memoryCategories: [{ name: "product" }, { name: "support" }],
      traitSchema: { plan: { type: "enum", enum: ["free", "pro"] } },
      retention: { turnsDays: 30, memoryDays: { event: 90 } }
    })
    expect(put.body.updatedAt).not.toBeNull()

    const patched = await admin<Settings>("PATCH", "/api/namespaces/shop/settings", {
      extractionInstructions: "Only products."
    })
    expect(patched.body).toMatchObject({
      extractionInstructions: "Only products.",
      memoryCategories: [{ name: "product" }, { name: "support" }],
      retention: { turnsDays: 30 }
    })
    expect((await admin<Settings>("GET", "/api/namespaces/shop/settings")).body).toEqual(patched.body)

    // PUT replaces everything: what it leaves out goes back to its default.
    const replaced = await admin<Settings>("PUT", "/api/namespaces/shop/settings", { extractionInstructions: "x" })
    expect(replaced.body).toMatchObject({ memoryCategories: [], traitSchema: null, retention: {} })
  })

  it("refuses bad settings with the field named, storing nothing", async () => {
    const before = await storedRows()
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ memoryCategories: [{ name: "has space", description: "" }] }, "invalid_memory_categories"],
      [
        {
          memoryCategories: [
            { name: "a", description: "" },
            { name: "a", description: "again" }
          ]
        },
        "invalid_memory_categories"
      ],
      [{ extractionInstructions: "x".repeat(4001) }, "invalid_extraction_instructions"],
      [{ retention: { turnsDays: 0 } }, "invalid_retention"],
      [{ retention: { memoryDays: { secret: 3 } } }, "invalid_retention"],
      [{ traitSchema: { mood: { type: "colour" } } }, "invalid_trait_schema"],
      [{ traitSchema: { mood: { type: "string", behaviour: "no-such-plugin" } } }, "invalid_trait_schema"]
    ]
    for (const [payload, code] of cases)
      expectError(await admin("PUT", "/api/namespaces/fresh/settings", payload), 400, code)
    expectError(await admin("PUT", "/api/namespaces/Bad Name/settings", {}), 400, "invalid_namespace")
    expect(await storedRows()).toBe(before)
  })

  it("is the global admin's and the namespace's own admin key's, no other key's", async () => {
    const created = await admin<{ key: string }>("POST", "/api/keys", { scope: "admin" }, "team-a")
    expect(created.status).toBe(201)
    const teamAdmin = created.body.key
    expect(
      (await as(teamAdmin, "PATCH", "/api/namespaces/team-a/settings", { extractionInstructions: "a" })).status
    ).toBe(200)
    expectError(
      await as(teamAdmin, "PATCH", "/api/namespaces/team-b/settings", { extractionInstructions: "b" }),
      403,
      "namespace_not_allowed"
    )
    expectError(await as(teamAdmin, "GET", "/api/namespaces/team-b/settings"), 403, "namespace_not_allowed")
    const app = await admin<{ key: string }>("POST", "/api/keys", { scope: "app" }, "team-a")
    expect((await as(app.body.key, "GET", "/api/namespaces/team-a/settings")).status).toBe(403)
  })

  it("sorts memories into the namespace's categories: only those, listed and filtered by them", async () => {
    await admin("PUT", "/api/namespaces/garden/settings", {
      memoryCategories: [{ name: "plants", description: "What the user grows" }]
    })
    const added = await admin<{ memory: MemoryJson }>(
      "POST",
      "/api/profiles/gardener/memories",
      { content: "Grows tomatoes on the balcony", type: "fact", category: "plants" },
      "garden"
    )
    expect(added.status).toBe(201)
    expect(added.body.memory).toMatchObject({ category: "plants", source: "text", expiresAt: null })
    await admin("POST", "/api/profiles/gardener/memories", { content: "Lives in Lyon", type: "fact" }, "garden")

    const before = await gw.counts()
    const refused = expectError(
      await admin(
        "POST",
        "/api/profiles/gardener/memories",
        { content: "Has a cat", type: "fact", category: "pets" },
        "garden"
      ),
      400,
      "unknown_category"
    )
    expect(refused).toContain("plants")
    expect(await gw.counts()).toEqual(before)

    const listed = await admin<{ memories: ReadonlyArray<MemoryJson>; total: number }>(
      "GET",
      "/api/profiles/gardener/memories?category=plants",
      undefined,
      "garden"
    )
    expect(listed.body.memories.map((memory) => memory.content)).toEqual(["Grows tomatoes on the balcony"])
    expect(listed.body.total).toBe(1)

    const found = await admin<{ memories: ReadonlyArray<MemoryJson> }>(
      "POST",
      "/api/profiles/gardener/memories/search",
      { query: "tomatoes in Lyon", filter: { categories: ["plants"] } },
      "garden"
    )
    expect(found.body.memories.map((memory) => memory.content)).toEqual(["Grows tomatoes on the balcony"])

    const cleared = await admin<{ memory: MemoryJson }>(
      "PATCH",
      `/api/profiles/gardener/memories/${added.body.memory.id}`,
      { category: null },
      "garden"
    )
    expect(cleared.body.memory.category).toBeNull()
  })

  it("gives memories their expiry from the retention policy, unless a caller set one", async () => {
    const write = (content: string, type: string, extra: Record<string, unknown> = {}) =>
      admin<{ memory: MemoryJson }>(
        "POST",
        "/api/profiles/keeper/memories",
        { content, type, ...extra },
        "retained"
      ).then((response) => response.body.memory)
    const lifetime = (memory: MemoryJson) =>
      memory.expiresAt === null
        ? null
        : Math.round((Date.parse(memory.expiresAt) - Date.parse(memory.createdAt)) / DAY_MS)

    const early = await write("Went to Rome in May", "event")
    expect(early.expiresAt).toBeNull()

    await admin("PUT", "/api/namespaces/retained/settings", { retention: { memoryDays: { event: 30, fact: 365 } } })
    const event = await write("Ran a marathon", "event")
    const fact = await write("Speaks Italian", "fact")
    const preference = await write("Prefers aisle seats", "preference")
    const pinned = await write("Starts a new job on Monday", "event", { expiresAt: "2030-01-01T00:00:00Z" })
    const forever = await write("Was born in Turin", "event", { expiresAt: null })
    expect([lifetime(event), lifetime(fact), lifetime(preference)]).toEqual([30, 365, null])
    expect(pinned.expiresAt).toBe("2030-01-01T00:00:00.000Z")
    expect(forever.expiresAt).toBeNull()
    // An expiry already past would never be injected: refused, nothing stored.
    const before = await gw.counts()
    expectError(
      await admin(
        "POST",
        "/api/profiles/keeper/memories",
        { content: "Is in Paris today", type: "context", expiresAt: "2020-01-01" },
        "retained"
      ),
      400,
      "invalid_expires_at"
    )
    expect(await gw.counts()).toEqual(before)

    // A change of policy moves every memory without an expiry of its own, the earlier ones too.
    await admin("PATCH", "/api/namespaces/retained/settings", { retention: { memoryDays: { event: 7 } } })
    const listed = await admin<{ memories: ReadonlyArray<MemoryJson> }>(
      "GET",
      "/api/profiles/keeper/memories",
      undefined,
      "retained"
    )
    const byContent = new Map(listed.body.memories.map((memory) => [memory.content, memory]))
    expect(lifetime(byContent.get("Went to Rome in May")!)).toBe(7)
    expect(lifetime(byContent.get("Ran a marathon")!)).toBe(7)
    expect(lifetime(byContent.get("Speaks Italian")!)).toBeNull()
    expect(byContent.get("Starts a new job on Monday")!.expiresAt).toBe("2030-01-01T00:00:00.000Z")
    expect(byContent.get("Was born in Turin")!.expiresAt).toBeNull()

    // A memory retyped takes its new type's lifetime.
    const retyped = await admin<{ memory: MemoryJson }>(
      "PATCH",
      `/api/profiles/keeper/memories/${fact.id}`,
      { type: "event" },
      "retained"
    )
    expect(lifetime(retyped.body.memory)).toBe(7)
  })

  it("types, lists and injects traits by the namespace's own trait schema, in that namespace only", async () => {
    const put = await admin("PUT", "/api/namespaces/saas/settings", {
      traitSchema: {
        plan: { type: "enum", enum: ["free", "pro"], injection: { template: "Subscribed to the {{value}} plan" } }
      }
    })
    expect(put.status).toBe(200)
    const keys = (namespace: string) =>
      admin<{ definitions: ReadonlyArray<{ key: string }> }>(
        "GET",
        "/api/trait-definitions",
        undefined,
        namespace
      ).then((response) => response.body.definitions.map((definition) => definition.key))
    // Every replica reads a change within a second.
    expect(await eventually(async () => ((await keys("saas")).includes("plan") ? keys("saas") : undefined))).toEqual([
      "plan"
    ])
    expect(await keys("default")).not.toContain("plan")

    for (const namespace of ["saas", "other"])
      await admin("POST", "/api/profiles", { externalId: "subscriber" }, namespace)
    expectError(
      await admin("PUT", "/api/profiles/subscriber/traits/plan", { value: "gold" }, "saas"),
      400,
      "invalid_trait_value"
    )
    expect((await admin("PUT", "/api/profiles/subscriber/traits/plan", { value: "pro" }, "saas")).status).toBe(200)
    // Elsewhere "plan" is nobody's declared trait: any first value sets its type.
    expect((await admin("PUT", "/api/profiles/subscriber/traits/plan", { value: "gold" }, "other")).status).toBe(200)

    const app = await admin<{ key: string }>("POST", "/api/keys", { scope: "app" }, "saas")
    up.requests.length = 0
    await new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: app.body.key,
      maxRetries: 0,
      defaultHeaders: { "x-service-id": "subscriber" }
    }).chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "Which features do I have?" }]
    })
    expect(injectedText(up.requests.at(-1)?.body)).toContain("Subscribed to the pro plan")
  })
})
