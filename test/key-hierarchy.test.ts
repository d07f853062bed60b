import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

const APP = "sk-app-hierarchy-0123456789"
const ADMIN = "sk-admin-hierarchy-0123456789"

interface KeyJson {
  readonly id: string
  readonly key: string
  readonly namespace: string
  readonly scope: "app" | "admin"
  readonly rateLimitPerMinute: number | null
  readonly expiresAt: string | null
  readonly revokedAt: string | null
  readonly createdBy: string | null
}

describe("keys created by keys held in the database", () => {
  let up: FakeUpstream
  let gw: TestGateway
  let replica: TestGateway
  beforeAll(async () => {
    up = await startFakeUpstream()
    const env = {
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-upstream",
      SERVICE_API_KEY: APP,
      ADMIN_API_KEY: ADMIN,
      // Waiting for a replica to learn of a key sends it unknown keys many times a second.
      AUTH_FAILURES_PER_MINUTE: "0",
      KEY_ENCRYPTION_KEY: "b".repeat(64)
    }
    gw = await startGateway(env)
    replica = await startGateway(env, { databaseUrl: gw.databaseUrl })
  })
  afterAll(async () => {
    await replica.close()
    await gw.close()
    await up.close()
  })

  const as = <T>(key: string, method: string, path: string, json?: unknown, on: TestGateway = gw) =>
    on.request<T>(method, path, {
      headers: { authorization: `Bearer ${key}` },
      ...(json === undefined ? {} : { json })
    })

  const create = async (by: string, body: unknown) => {
    const created = await as<KeyJson>(by, "POST", "/api/keys", body)
    expect(created.status, created.text).toBe(201)
    return created.body
  }

  const listed = async (by = ADMIN) => {
    const { body } = await as<{ keys: ReadonlyArray<KeyJson> }>(by, "GET", "/api/keys")
    return (id: string) => body.keys.find((key) => key.id === id)!
  }

  const keyCount = async () => (await gw.query<{ n: number }>("SELECT count(*)::int AS n FROM api_keys"))[0]!.n

  /** The status a key gets: an app key's chat completion, an admin key's key listing. */
  const statusOf = async (key: KeyJson, on: TestGateway = gw) =>
    key.scope === "app"
      ? (
          await on.request("POST", "/v1/chat/completions", {
            headers: { authorization: `Bearer ${key.key}`, "x-service-id": "hierarchy-user" },
            json: { model: "gpt-test", messages: [{ role: "user", content: "hi" }] }
          })
        ).status
      : (await as(key.key, "GET", "/api/keys", undefined, on)).status

  /** Waits (bounded) until `on` answers the key with `status`: a new key or a revocation reaching a replica. */
  const answersSoon = (key: KeyJson, status: number, on: TestGateway, timeoutMs?: number) =>
    eventually(async () => ((await statusOf(key, on)) === status ? true : undefined), timeoutMs)

  const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString()

  it("closes the reported hole: a limited, short-lived admin key makes only keys as limited, which die with it", async () => {
    const creator = await create(ADMIN, {
      namespace: "acme",
      scope: "admin",
      expiresAt: new Date(Date.now() + 20_000).toISOString(),
      rateLimitPerMinute: 5
    })
    // Nothing said: the child inherits the expiry and the limit.
    const child = await create(creator.key, { scope: "admin" })
    expect(child).toMatchObject({
      namespace: "acme",
      scope: "admin",
      expiresAt: creator.expiresAt,
      rateLimitPerMinute: 5,
      createdBy: creator.id
    })
    // Asked for outright: refused, and nothing stored.
    const before = await keyCount()
    const noExpiry = expectError(
      await as(creator.key, "POST", "/api/keys", { scope: "admin", expiresAt: null }),
      403,
      "exceeds_creator_key"
    )
    expect(noExpiry).toContain(creator.expiresAt!)
    expectError(
      await as(creator.key, "POST", "/api/keys", { scope: "admin", rateLimitPerMinute: null }),
      403,
      "exceeds_creator_key"
    )
    expect(await keyCount()).toBe(before)

    expect(await statusOf(child)).toBe(200)
    expect((await as(ADMIN, "DELETE", `/api/keys/${creator.id}`)).status).toBe(200)
    expect(await statusOf(child)).toBe(401)
  })

  it("refuses a later expiry or a higher limit with 403 exceeds_creator_key, naming the limit, and stores nothing", async () => {
    const expiresAt = inAnHour()
    const creator = await create(ADMIN, { namespace: "acme", scope: "admin", expiresAt, rateLimitPerMinute: 50 })
    const before = await keyCount()

    const later = await as(creator.key, "POST", "/api/keys", {
      expiresAt: new Date(Date.parse(expiresAt) + 1000).toISOString()
    })
    expect(expectError(later, 403, "exceeds_creator_key")).toContain(expiresAt)
    expect((later.body as { error: { param: string } }).error.param).toBe("expiresAt")

    const higher = await as(creator.key, "POST", "/api/keys", { rateLimitPerMinute: 51 })
    expect(expectError(higher, 403, "exceeds_creator_key")).toContain("50 requests a minute")
    expect((higher.body as { error: { param: string } }).error.param).toBe("rateLimitPerMinute")
    expect(await keyCount()).toBe(before)

    // As much as the creator, or less, is fine; so is an app key from an admin key.
    const equal = await create(creator.key, { scope: "admin", expiresAt, rateLimitPerMinute: 50 })
    expect(equal).toMatchObject({ expiresAt, rateLimitPerMinute: 50 })
    const less = await create(creator.key, { rateLimitPerMinute: 10, expiresAt: new Date(Date.now() + 60_000) })
    expect(less).toMatchObject({ scope: "app", rateLimitPerMinute: 10 })
  })

  it("passes what is left out down from the creator: its limit holds the child, and its expiry ends it", async () => {
    const creator = await create(ADMIN, {
      namespace: "acme",
      scope: "admin",
      rateLimitPerMinute: 3,
      expiresAt: new Date(Date.now() + 6000).toISOString()
    })
    const child = await create(creator.key, {})
    expect(child).toMatchObject({ scope: "app", rateLimitPerMinute: 3, expiresAt: creator.expiresAt })
    expect([await statusOf(child), await statusOf(child), await statusOf(child)]).toEqual([200, 200, 200])
    expect(await statusOf(child)).toBe(429)
    // The creator's expiry is the child's: it stops when its creator does.
    await answersSoon(child, 401, gw, 15_000)
  })

  it("puts no limit on keys the environment's admin key creates, and records who created each key", async () => {
    const top = await create(ADMIN, { namespace: "globex", scope: "admin" })
    expect(top).toMatchObject({ expiresAt: null, rateLimitPerMinute: null, createdBy: null })
    const middle = await create(top.key, { scope: "admin" })
    const leaf = await create(middle.key, {})
    expect([middle.createdBy, leaf.createdBy]).toEqual([top.id, middle.id])

    // Listed by the global admin and by the namespace's own admin key alike.
    for (const by of [ADMIN, top.key]) {
      const find = await listed(by)
      expect([find(top.id).createdBy, find(middle.id).createdBy, find(leaf.id).createdBy]).toEqual([
        null,
        top.id,
        middle.id
      ])
    }
  })

  it("revokes every key a key created, transitively, at once here and within a second on every replica", async () => {
    const top = await create(ADMIN, { namespace: "initech", scope: "admin" })
    const middle = await create(top.key, { scope: "admin" })
    const leaf = await create(middle.key, {})
    const sibling = await create(top.key, {})
    const unrelated = await create(ADMIN, { namespace: "initech" })
    for (const key of [middle, leaf, sibling, unrelated]) await answersSoon(key, 200, replica)

    // Revoking the middle key takes its own children, not its creator nor its siblings.
    expect((await as(ADMIN, "DELETE", `/api/keys/${middle.id}`)).status).toBe(200)
    expect(await statusOf(leaf)).toBe(401)
    await answersSoon(leaf, 401, replica)
    expect(await statusOf(sibling)).toBe(200)
    expect(await statusOf(top)).toBe(200)

    // Revoking the top takes the rest of its tree; a key the environment's key made stays.
    expect((await as(ADMIN, "DELETE", `/api/keys/${top.id}`)).status).toBe(200)
    expect(await statusOf(sibling)).toBe(401)
    await answersSoon(sibling, 401, replica)
    expect(await statusOf(unrelated)).toBe(200)
    expect(await statusOf(unrelated, replica)).toBe(200)

    const find = await listed()
    for (const key of [top, middle, leaf, sibling]) expect(find(key.id).revokedAt).not.toBeNull()
    expect(find(unrelated.id).revokedAt).toBeNull()
  })

  it("keeps a rotated key's place in the tree: its creator stays, the keys it created follow it", async () => {
    const top = await create(ADMIN, { namespace: "umbrella", scope: "admin" })
    const middle = await create(top.key, { scope: "admin" })
    const leaf = await create(middle.key, {})

    const rotated = await as<KeyJson>(ADMIN, "POST", `/api/keys/${middle.id}/rotate`, { graceSeconds: 0 })
    expect(rotated.status).toBe(201)
    const newMiddle = rotated.body
    expect(newMiddle.createdBy).toBe(top.id)
    expect(await statusOf(middle)).toBe(401)
    expect(await statusOf(leaf)).toBe(200)
    expect((await listed())(leaf.id).createdBy).toBe(newMiddle.id)

    // Revoking the rotated key reaches the children of the old one; revoking its creator reaches it.
    const other = await create(newMiddle.key, {})
    expect((await as(ADMIN, "DELETE", `/api/keys/${newMiddle.id}`)).status).toBe(200)
    expect([await statusOf(leaf), await statusOf(other)]).toEqual([401, 401])

    const second = await create(top.key, { scope: "admin" })
    const secondRotated = (await as<KeyJson>(ADMIN, "POST", `/api/keys/${second.id}/rotate`, { graceSeconds: 0 })).body
    expect((await as(ADMIN, "DELETE", `/api/keys/${top.id}`)).status).toBe(200)
    expect(await statusOf(secondRotated)).toBe(401)
  })

  it("lets a key held in the database revoke only itself and the keys it created", async () => {
    const admin = await create(ADMIN, { namespace: "initech", scope: "admin" })
    const sibling = await create(ADMIN, { namespace: "initech", scope: "admin" })
    const siblingsChild = await create(sibling.key, {})
    const grandchild = await create((await create(admin.key, { scope: "admin" })).key, {})

    for (const target of [sibling, siblingsChild]) {
      expectError(await as(admin.key, "DELETE", `/api/keys/${target.id}`), 403, "not_created_by_this_key")
      expect(await statusOf(target)).toBe(200)
    }
    expectError(await as(admin.key, "DELETE", `/api/keys/${crypto.randomUUID()}`), 404, "key_not_found")
    expect((await as(admin.key, "DELETE", `/api/keys/${grandchild.id}`)).status).toBe(200)
    expect(await statusOf(grandchild)).toBe(401)
    expect((await as(admin.key, "DELETE", `/api/keys/${admin.id}`)).status).toBe(200)
    expect(await statusOf(admin)).toBe(401)
  })

  it("lets a key held in the database rotate only itself and the keys it created", async () => {
    const admin = await create(ADMIN, { namespace: "hooli", scope: "admin" })
    const own = await create(admin.key, {})
    const grandchild = await create((await create(admin.key, { scope: "admin" })).key, {})
    const byTheRoot = await create(ADMIN, { namespace: "hooli" })

    expect((await as(admin.key, "POST", `/api/keys/${own.id}/rotate`, {})).status).toBe(201)
    expect((await as(admin.key, "POST", `/api/keys/${grandchild.id}/rotate`, {})).status).toBe(201)
    const before = await keyCount()
    expectError(await as(admin.key, "POST", `/api/keys/${byTheRoot.id}/rotate`, {}), 403, "not_created_by_this_key")
    expect(await keyCount()).toBe(before)
    expect(await statusOf(byTheRoot)).toBe(200)
    expectError(await as(admin.key, "POST", `/api/keys/${crypto.randomUUID()}/rotate`, {}), 404, "key_not_found")
    const itself = await as<KeyJson>(admin.key, "POST", `/api/keys/${admin.id}/rotate`, { graceSeconds: 0 })
    expect(itself.status).toBe(201)
    expect(await statusOf(itself.body)).toBe(200)
  })

  it("refuses a provider key with control characters at creation (400), storing nothing", async () => {
    const before = await keyCount()
    for (const apiKey of ["sk-abc\r\nX-Injected: 1", "sk-abc\n", "sk-\u0000abc", "sk-abc\u0085", "sk-\tabc"]) {
      const refused = await as(ADMIN, "POST", "/api/keys", {
        namespace: "acme",
        upstream: { provider: "openai", apiKey }
      })
      expect(expectError(refused, 400, "invalid_upstream")).toContain("control characters")
      expect((refused.body as { error: { param: string } }).error.param).toBe("upstream.apiKey")
    }
    expect(await keyCount()).toBe(before)
    const bound = await create(ADMIN, { namespace: "acme", upstream: { provider: "openai", apiKey: "sk-clean-key-1" } })
    expect(await statusOf(bound)).toBe(200)
    expect(up.requests.at(-1)!.headers["authorization"]).toBe("Bearer sk-clean-key-1")
  })

  it("passes a provider binding on: a bound key's keys never spend the gateway's own provider key", async () => {
    const tenant = await create(ADMIN, {
      namespace: "bound-tenant",
      scope: "admin",
      upstream: { provider: "openai", apiKey: "sk-tenant-own-1" }
    })
    const inherited = await create(tenant.key, { scope: "app" })
    expect(await statusOf(inherited)).toBe(200)
    expect(up.requests.at(-1)!.headers["authorization"]).toBe("Bearer sk-tenant-own-1")
    const named = await create(tenant.key, {
      scope: "app",
      upstream: { provider: "openai", apiKey: "sk-tenant-app-2" }
    })
    expect(await statusOf(named)).toBe(200)
    expect(up.requests.at(-1)!.headers["authorization"]).toBe("Bearer sk-tenant-app-2")
  })
})
