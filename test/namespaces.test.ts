import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

const APP = "sk-app-namespaces-0123456789"
const ADMIN = "sk-admin-namespaces-0123456789"

interface ProfileBody {
  readonly id: string
  readonly namespace: string
  readonly externalId: string
  readonly summary: string | null
}

describe("namespaces, with the environment's keys", () => {
  let up: FakeUpstream
  let gw: TestGateway
  beforeAll(async () => {
    up = await startFakeUpstream()
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-upstream",
      SERVICE_API_KEY: APP,
      ADMIN_API_KEY: ADMIN,
      EXTRACTION_CONCURRENCY: "0"
    })
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  /** The admin key, acting in `namespace` (or across all of them). */
  const admin = <T>(method: string, path: string, namespace?: string, json?: unknown) =>
    gw.request<T>(method, path, {
      headers: {
        authorization: `Bearer ${ADMIN}`,
        ...(namespace === undefined ? {} : { "x-service-namespace": namespace })
      },
      ...(json === undefined ? {} : { json })
    })

  const chat = (user: string, headers: Record<string, string> = {}) =>
    new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: APP,
      maxRetries: 0,
      defaultHeaders: { "x-service-id": user, ...headers }
    }).chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "What should I drink?" }] })

  it("keeps one user id apart in two namespaces: each sees, changes and erases only its own", async () => {
    const created = async (namespace: string) => {
      const response = await admin<{ profile: ProfileBody }>("POST", "/api/profiles", namespace, {
        externalId: "alice"
      })
      expect(response.status).toBe(201)
      return response.body.profile
    }
    const a = await created("app-a")
    const b = await created("app-b")
    expect(a).toMatchObject({ namespace: "app-a", externalId: "alice" })
    expect(b).toMatchObject({ namespace: "app-b", externalId: "alice" })
    expect(b.id).not.toBe(a.id)

    const aliceIn = async (namespace: string) =>
      (await admin<{ profile: ProfileBody }>("GET", "/api/profiles/alice", namespace)).body.profile
    expect((await admin("PATCH", "/api/profiles/alice", "app-a", { summary: "Drinks tea." })).status).toBe(200)
    expect((await aliceIn("app-b")).summary).toBeNull()
    expect((await aliceIn("app-a")).summary).toBe("Drinks tea.")

    // By internal id too: another namespace's profile does not exist here.
    expectError(await admin("GET", `/api/profiles/${a.id}`, "app-b"), 404, "profile_not_found")
    const listedInB = await admin<{ profiles: Array<ProfileBody> }>("GET", "/api/profiles", "app-b")
    expect(listedInB.body.profiles.map((p) => [p.namespace, p.externalId])).toEqual([["app-b", "alice"]])
    // The global admin naming no namespace sees them all.
    const listedEverywhere = await admin<{ profiles: Array<ProfileBody> }>("GET", "/api/profiles")
    expect(listedEverywhere.body.profiles.map((p) => p.id)).toEqual(expect.arrayContaining([a.id, b.id]))

    expect((await admin("DELETE", "/api/profiles/alice", "app-b")).status).toBe(200)
    expect((await aliceIn("app-a")).id).toBe(a.id)
    expectError(await admin("GET", "/api/profiles/alice", "app-b"), 404, "profile_not_found")
    // Nor is its internal id taken here: no way to learn that it exists elsewhere.
    expect((await admin("POST", "/api/profiles", "app-b", { externalId: a.id })).status).toBe(201)
  })

  it("serves the environment's app key in `default`, injecting that namespace's memories only", async () => {
    for (const [namespace, drink] of [
      ["app-a", "green tea"],
      ["default", "espresso"]
    ]) {
      expect((await admin("POST", "/api/profiles", namespace, { externalId: "bob" })).status).toBe(201)
      const memory = await admin("POST", "/api/profiles/bob/memories", namespace, {
        content: `Bob only drinks ${drink}`,
        type: "preference"
      })
      expect(memory.status).toBe(201)
    }

    const answer = await chat("bob")
    expect(answer.object).toBe("chat.completion")
    const sent = JSON.stringify(up.requests.at(-1)!.body)
    expect(sent).toContain("espresso")
    expect(sent).not.toContain("green tea")

    // The turn went to default's bob, and its extraction job is listed there only (app-a's bob has
    // the job that writes cues for the memory added above).
    const pendingKinds = async (namespace: string) =>
      (await admin<{ jobs: Array<{ kind: string }> }>("GET", "/api/jobs?status=pending", namespace)).body.jobs.map(
        (job) => job.kind
      )
    expect(await pendingKinds("default")).toContain("turn")
    expect(await pendingKinds("app-a")).not.toContain("turn")
    expect(await pendingKinds("app-a")).toContain("cues")
  })

  it("lists the namespaces with their profiles: all of them for the global admin, one when it names one", async () => {
    const everywhere = await admin<{ namespaces: Array<{ name: string; profiles: number; keys: number }> }>(
      "GET",
      "/api/namespaces"
    )
    const names = everywhere.body.namespaces.map((namespace) => namespace.name)
    expect(names).toEqual([...names].sort())
    expect(names).toEqual(expect.arrayContaining(["app-a", "app-b", "default"]))
    const appA = everywhere.body.namespaces.find((namespace) => namespace.name === "app-a")!
    const listedInA = await admin<{ total: number }>("GET", "/api/profiles", "app-a")
    expect(appA).toEqual({ name: "app-a", profiles: listedInA.body.total, keys: 0, budget: null, userBudget: null })
    const one = await admin<{ namespaces: Array<{ name: string }> }>("GET", "/api/namespaces", "app-b")
    expect(one.body.namespaces.map((namespace) => namespace.name)).toEqual(["app-b"])
  })

  it("refuses an app key naming another namespace (403), and a header naming none (400), storing nothing", async () => {
    const before = await gw.counts()
    const refused = await chat("carol", { "x-service-namespace": "app-a" }).then(
      () => undefined,
      (error: unknown) => error
    )
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError)
    expect((refused as InstanceType<typeof OpenAI.PermissionDeniedError>).code).toBe("namespace_not_allowed")
    expectError(
      await admin("POST", "/api/profiles", "Not A Namespace", { externalId: "carol" }),
      400,
      "invalid_namespace"
    )
    // Binding a provider key needs KEY_ENCRYPTION_KEY, which this gateway lacks.
    expectError(
      await admin("POST", "/api/keys", "app-a", { upstream: { provider: "openai", apiKey: "sk-x" } }),
      400,
      "key_encryption_not_configured"
    )
    expect((await admin<{ keys: Array<unknown> }>("GET", "/api/keys", "app-a")).body.keys).toEqual([])
    expect(await gw.counts()).toEqual(before)
  })
})
