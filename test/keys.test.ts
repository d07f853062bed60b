import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

const APP = "sk-app-keys-0123456789"
const ADMIN = "sk-admin-keys-0123456789"

interface CreatedKey {
  readonly id: string
  readonly key: string
  readonly namespace: string
  readonly scope: string
  readonly prefix: string
}

describe("keys held in the database", () => {
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
      KEY_ENCRYPTION_KEY: "a".repeat(64)
    }
    gw = await startGateway(env)
    replica = await startGateway(env, { databaseUrl: gw.databaseUrl })
  })
  afterAll(async () => {
    await replica.close()
    await gw.close()
    await up.close()
  })

  const as = <T>(key: string, method: string, path: string, json?: unknown, headers: Record<string, string> = {}) =>
    gw.request<T>(method, path, {
      headers: { authorization: `Bearer ${key}`, ...headers },
      ...(json === undefined ? {} : { json })
    })

  const create = async (by: string, body: unknown) => {
    const created = await as<CreatedKey>(by, "POST", "/api/keys", body)
    expect(created.status).toBe(201)
    return created.body
  }

  const chat = (baseUrl: string, key: string, user: string, headers: Record<string, string> = {}) =>
    new OpenAI({
      baseURL: `${baseUrl}/v1`,
      apiKey: key,
      maxRetries: 0,
      defaultHeaders: { "x-service-id": user, ...headers }
    }).chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })

  /** Waits until the gateway at `baseUrl` refuses `key` with 401 (a revocation or expiry taking effect). */
  const refusedSoon = (baseUrl: string, key: string, user: string, timeoutMs?: number) =>
    eventually(
      () =>
        chat(baseUrl, key, user).then(
          () => undefined,
          (error: { status?: number }) => (error.status === 401 ? true : undefined)
        ),
      timeoutMs
    )

  it("creates an app key for a namespace, shows its secret once, and serves /v1 in that namespace", async () => {
    const acme = await create(ADMIN, { namespace: "acme", scope: "app", label: "acme web" })
    expect(acme).toMatchObject({ namespace: "acme", scope: "app" })
    expect(acme.key.startsWith(acme.prefix)).toBe(true)

    const listed = await as<{ keys: Array<Record<string, unknown>> }>(ADMIN, "GET", "/api/keys")
    const entry = listed.body.keys.find((key) => key.id === acme.id)!
    expect(entry).toMatchObject({ namespace: "acme", label: "acme web", revokedAt: null })
    expect(JSON.stringify(listed.body)).not.toContain(acme.key)

    expect((await chat(gw.baseUrl, acme.key, "dana")).object).toBe("chat.completion")
    const inAcme = await as<{ profile: { namespace: string } }>(ADMIN, "GET", "/api/profiles/dana", undefined, {
      "x-service-namespace": "acme"
    })
    expect(inAcme.body.profile.namespace).toBe("acme")
    expectError(
      await as(ADMIN, "GET", "/api/profiles/dana", undefined, { "x-service-namespace": "default" }),
      404,
      "profile_not_found"
    )

    // Its namespace comes from the key: naming another is refused, and so is the management API.
    await expect(chat(gw.baseUrl, acme.key, "dana", { "x-service-namespace": "default" })).rejects.toMatchObject({
      status: 403,
      code: "namespace_not_allowed"
    })
    expectError(await as(acme.key, "GET", "/api/profiles"), 403, "insufficient_scope")
  })

  it("gives a namespace's admin key that namespace only: its profiles, its keys", async () => {
    const admin = await create(ADMIN, { namespace: "globex", scope: "admin" })
    await as(ADMIN, "POST", "/api/profiles", { externalId: "erin" }, { "x-service-namespace": "globex" })
    await as(ADMIN, "POST", "/api/profiles", { externalId: "erin" }, { "x-service-namespace": "initech" })

    const listed = await as<{ profiles: Array<{ namespace: string }> }>(admin.key, "GET", "/api/profiles")
    expect(listed.body.profiles.map((p) => p.namespace)).toEqual(["globex"])
    expectError(
      await as(admin.key, "GET", "/api/profiles", undefined, { "x-service-namespace": "initech" }),
      403,
      "namespace_not_allowed"
    )
    expectError(await as(admin.key, "POST", "/api/keys", { namespace: "initech" }), 403, "namespace_not_allowed")
    const own = await create(admin.key, { scope: "app" })
    expect(own.namespace).toBe("globex")
    const keys = await as<{ keys: Array<{ namespace: string }> }>(admin.key, "GET", "/api/keys")
    expect(new Set(keys.body.keys.map((key) => key.namespace))).toEqual(new Set(["globex"]))
    // An admin key does not admit /v1; nor a namespace's admin key /metrics, which counts every namespace.
    await expect(chat(gw.baseUrl, admin.key, "erin")).rejects.toMatchObject({ status: 403 })
    expectError(await as(admin.key, "GET", "/metrics"), 403, "insufficient_scope")
    expect((await as(ADMIN, "GET", "/metrics")).status).toBe(200)
  })

  it("refuses a revoked key at once on its replica and within a second on the others, and an expired one once it expires", async () => {
    const key = await create(ADMIN, { namespace: "acme" })
    // The other replica learns of the new key within a second, like of its revocation.
    await eventually(() =>
      chat(replica.baseUrl, key.key, "frank").then(
        (answer) => answer.object,
        () => undefined
      )
    )
    expect((await as(ADMIN, "DELETE", `/api/keys/${key.id}`)).status).toBe(200)
    await expect(chat(gw.baseUrl, key.key, "frank")).rejects.toMatchObject({ status: 401, code: "invalid_api_key" })
    await refusedSoon(replica.baseUrl, key.key, "frank")
    expectError(await as(ADMIN, "DELETE", "/api/keys/not-a-key"), 404, "key_not_found")

    expectError(await as(ADMIN, "POST", "/api/keys", { expiresAt: "2020-01-01T00:00:00Z" }), 400, "invalid_expiry")
    const brief = await create(ADMIN, { namespace: "acme", expiresAt: new Date(Date.now() + 3000).toISOString() })
    expect((await chat(gw.baseUrl, brief.key, "frank")).object).toBe("chat.completion")
    await refusedSoon(gw.baseUrl, brief.key, "frank", 15_000)
  })

  it("rotates a key: the new secret works at once, the old one until its grace period ends", async () => {
    const old = await create(ADMIN, { namespace: "acme", label: "rotating", rateLimitPerMinute: 1000 })
    const rotated = await as<CreatedKey & { label: string; rateLimitPerMinute: number }>(
      ADMIN,
      "POST",
      `/api/keys/${old.id}/rotate`,
      { graceSeconds: 2 }
    )
    expect(rotated.status).toBe(201)
    expect(rotated.body).toMatchObject({ namespace: "acme", scope: "app", label: "rotating", rateLimitPerMinute: 1000 })
    expect(rotated.body.key).not.toBe(old.key)
    expect((await chat(gw.baseUrl, rotated.body.key, "gina")).object).toBe("chat.completion")
    expect((await chat(gw.baseUrl, old.key, "gina")).object).toBe("chat.completion")
    await refusedSoon(gw.baseUrl, old.key, "gina", 15_000)
    expect((await chat(gw.baseUrl, rotated.body.key, "gina")).object).toBe("chat.completion")
    expectError(await as(ADMIN, "POST", `/api/keys/${crypto.randomUUID()}/rotate`, {}), 404, "key_not_found")
  })

  it("holds a key to its own limit of requests a minute, apart from the other keys", async () => {
    const limited = await create(ADMIN, { namespace: "acme", rateLimitPerMinute: 2 })
    const other = await create(ADMIN, { namespace: "acme" })
    expect((await chat(gw.baseUrl, limited.key, "hank")).object).toBe("chat.completion")
    expect((await chat(gw.baseUrl, limited.key, "hank")).object).toBe("chat.completion")
    await expect(chat(gw.baseUrl, limited.key, "hank")).rejects.toMatchObject({ status: 429 })
    expect((await chat(gw.baseUrl, other.key, "hank")).object).toBe("chat.completion")
    expectError(await as(ADMIN, "POST", "/api/keys", { rateLimitPerMinute: 0 }), 400, "invalid_rate_limit_per_minute")
  })

  it("binds a key to a provider key: its requests go with it, and the key is never shown or stored in clear", async () => {
    const bound = await create(ADMIN, {
      namespace: "acme",
      upstream: { provider: "openai", apiKey: "sk-bound-provider-key-42" }
    })
    expect((await chat(gw.baseUrl, bound.key, "ivy")).object).toBe("chat.completion")
    expect(up.requests.at(-1)!.headers["authorization"]).toBe("Bearer sk-bound-provider-key-42")
    // Keys without a binding still use the gateway's own provider key.
    const plain = await create(ADMIN, { namespace: "acme" })
    await chat(gw.baseUrl, plain.key, "ivy")
    expect(up.requests.at(-1)!.headers["authorization"]).toBe("Bearer sk-upstream")

    const listed = await as<{ keys: Array<{ id: string; upstreamProvider: string | null }> }>(ADMIN, "GET", "/api/keys")
    expect(listed.body.keys.find((key) => key.id === bound.id)!.upstreamProvider).toBe("openai")
    expect(listed.text).not.toContain("sk-bound-provider-key-42")
    const [row] = await gw.query<Record<string, unknown>>("SELECT * FROM api_keys WHERE id = $1", [bound.id])
    expect(JSON.stringify(row)).not.toContain("sk-bound-provider-key-42")

    // The app cannot swap the provider key or the provider.
    await expect(chat(gw.baseUrl, bound.key, "ivy", { "x-upstream-key": "sk-other" })).rejects.toMatchObject({
      status: 400,
      code: "upstream_key_not_allowed"
    })
    await expect(chat(gw.baseUrl, bound.key, "ivy", { "x-upstream-provider": "anthropic" })).rejects.toMatchObject({
      status: 400,
      code: "invalid_upstream_provider"
    })
  })
})

describe("keys held in the database, with /v1 open (no SERVICE_API_KEY)", () => {
  let up: FakeUpstream
  let gw: TestGateway
  beforeAll(async () => {
    up = await startFakeUpstream()
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-upstream",
      ADMIN_API_KEY: ADMIN,
      RATE_LIMIT_USER_PER_MINUTE: "1"
    })
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  const chat = (key: string, user: string) =>
    new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: key,
      maxRetries: 0,
      defaultHeaders: { "x-service-id": user }
    }).chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })

  it("still acts in a key's namespace, refuses it once revoked, and limits users per namespace", async () => {
    const created = await gw.request<CreatedKey>("POST", "/api/keys", {
      headers: { authorization: `Bearer ${ADMIN}` },
      json: { namespace: "acme" }
    })
    const key = created.body
    expect((await chat(key.key, "zoe")).object).toBe("chat.completion")
    // The same user id in `default` (no key needed) has a limit of its own.
    expect((await chat("unused", "zoe")).object).toBe("chat.completion")
    await expect(chat(key.key, "zoe")).rejects.toMatchObject({ status: 429 })
    const [row] = await gw.query<{ namespace: string }>(
      "SELECT namespace FROM profiles WHERE external_id = 'zoe' ORDER BY namespace"
    )
    expect(row?.namespace).toBe("acme")

    // Revoked, it is refused rather than served in `default`.
    await gw.request("DELETE", `/api/keys/${key.id}`, { headers: { authorization: `Bearer ${ADMIN}` } })
    await expect(chat(key.key, "yuri")).rejects.toMatchObject({ status: 401, code: "invalid_api_key" })
    expect(await gw.query("SELECT 1 FROM profiles WHERE external_id = 'yuri'")).toEqual([])
  })
})
