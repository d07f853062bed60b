import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

const APP_OLD = "sk-app-old-0123456789"
const APP_NEW = "sk-app-new-0123456789"
const ADMIN = "sk-admin-0123456789"
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
})
afterAll(() => up.close())

const sdk = (gw: TestGateway, apiKey: string) =>
  new OpenAI({ baseURL: `${gw.baseUrl}/v1`, apiKey, maxRetries: 0, defaultHeaders: { "X-Service-Id": "scope-user" } })

describe("with app keys (SERVICE_API_KEY, a list) and an admin key (ADMIN_API_KEY)", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-upstream",
      // Blank items and spaces are ignored: `old, new` while the new key rolls out.
      SERVICE_API_KEY: ` ${APP_OLD} ,, ${APP_NEW} `,
      ADMIN_API_KEY: ADMIN
    })
  })
  afterAll(() => gw.close())

  it("admits /v1 with either app key, so a key can be rotated without downtime", async () => {
    for (const key of [APP_OLD, APP_NEW]) {
      const models = await sdk(gw, key).models.list()
      expect(models.data.map((m) => m.id)).toEqual(["gpt-test"])
      const answer = await sdk(gw, key).chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "hi" }]
      })
      expect(answer.object).toBe("chat.completion")
    }
  })

  it("refuses an app key on the management API and /metrics with 403 insufficient_scope, storing nothing", async () => {
    const before = await gw.counts()
    const created = await gw.request("POST", "/api/profiles", {
      json: { externalId: "by-app-key" },
      headers: bearer(APP_NEW)
    })
    expect(expectError(created, 403, "insufficient_scope")).toContain("ADMIN_API_KEY")
    expect(created.body).toMatchObject({ error: { type: "permission_error" } })
    expect(await gw.counts()).toEqual(before)
    expectError(await gw.request("GET", "/api/profiles", { headers: bearer(APP_OLD) }), 403, "insufficient_scope")
    expectError(
      await gw.request("DELETE", "/api/profiles/scope-user", { headers: bearer(APP_OLD) }),
      403,
      "insufficient_scope"
    )
    expectError(await gw.request("GET", "/metrics", { headers: bearer(APP_OLD) }), 403, "insufficient_scope")
    // Paths nobody declared are the admin's too: a route added later is never open to app keys.
    expectError(await gw.request("GET", "/admin-later", { headers: bearer(APP_OLD) }), 403, "insufficient_scope")
  })

  it("admits the admin key on the management API and /metrics", async () => {
    const created = await gw.request("POST", "/api/profiles", {
      json: { externalId: "by-admin" },
      headers: bearer(ADMIN)
    })
    expect(created.status).toBe(201)
    expect((await gw.request("GET", "/api/profiles", { headers: bearer(ADMIN) })).status).toBe(200)
    const metrics = await gw.request<string>("GET", "/metrics", { headers: bearer(ADMIN) })
    expect(metrics.status).toBe(200)
    expect(metrics.text).toMatch(/gateway_auth_rejections_total\{code="insufficient_scope"\} [1-9]/)
    expectError(await gw.request("GET", "/no/such/route", { headers: bearer(ADMIN) }), 404, "not_found")
  })

  it("refuses the admin key on /v1: an app holding it would hold every profile", async () => {
    const error = await sdk(gw, ADMIN)
      .models.list()
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError)
    expect(error).toMatchObject({ status: 403, code: "insufficient_scope" })
    expect((error as Error).message).toContain("SERVICE_API_KEY")
  })

  it("still answers 401 for a missing or unknown key, whatever the path", async () => {
    expectError(await gw.request("GET", "/api/profiles"), 401, "missing_api_key")
    expectError(await gw.request("GET", "/metrics"), 401, "missing_api_key")
    expectError(await gw.request("GET", "/v1/models"), 401, "missing_api_key")
    expectError(await gw.request("GET", "/api/profiles", { headers: bearer("sk-nobody") }), 401, "invalid_api_key")
    for (const path of ["/health", "/ready", "/openapi.json", "/docs"]) {
      expect((await gw.request("GET", path)).status).toBe(200)
    }
  })
})

describe("with only ADMIN_API_KEY", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-upstream", ADMIN_API_KEY: ADMIN })
  })
  afterAll(() => gw.close())

  it("leaves /v1 open and guards the management API and /metrics with the admin key", async () => {
    const models = await gw.request("GET", "/v1/models")
    expect(models.status).toBe(200)
    expectError(await gw.request("GET", "/api/profiles"), 401, "missing_api_key")
    expectError(await gw.request("GET", "/metrics", { headers: bearer(APP_OLD) }), 401, "invalid_api_key")
    expect((await gw.request("GET", "/api/profiles", { headers: bearer(ADMIN) })).status).toBe(200)
    expect((await gw.request("GET", "/metrics", { headers: bearer(ADMIN) })).status).toBe(200)
  })
})

describe("with only SERVICE_API_KEY (a list)", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-upstream",
      SERVICE_API_KEY: `${APP_OLD},${APP_NEW}`
    })
  })
  afterAll(() => gw.close())

  it("admits every path with each of the keys, as a single shared key did", async () => {
    for (const key of [APP_OLD, APP_NEW]) {
      expect((await gw.request("GET", "/api/profiles", { headers: bearer(key) })).status).toBe(200)
      expect((await gw.request("GET", "/metrics", { headers: bearer(key) })).status).toBe(200)
      expect((await gw.request("GET", "/v1/models", { headers: bearer(key) })).status).toBe(200)
    }
    expectError(await gw.request("GET", "/api/profiles", { headers: bearer(ADMIN) }), 401, "invalid_api_key")
  })
})
