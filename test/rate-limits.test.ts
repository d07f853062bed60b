import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

const APP_A = "sk-app-a-0123456789"
const APP_B = "sk-app-b-0123456789"
const ADMIN = "sk-admin-0123456789"
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
})
afterAll(() => up.close())

/** Every sample of the exposition: `name{labels}` → value. */
const scrape = async (gw: TestGateway, headers: Record<string, string>) => {
  const response = await gw.request<string>("GET", "/metrics", { headers })
  expect(response.status).toBe(200)
  const samples = new Map<string, number>()
  for (const line of response.text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue
    const at = line.lastIndexOf(" ")
    samples.set(line.slice(0, at), Number(line.slice(at + 1)))
  }
  return samples
}

const expectRetryAfter = (headers: Headers) => {
  const seconds = Number(headers.get("retry-after"))
  expect(Number.isInteger(seconds) && seconds >= 1 && seconds <= 60).toBe(true)
  expect(Number(headers.get("retry-after-ms"))).toBeGreaterThan(0)
}

describe("wrong keys, per client (AUTH_FAILURES_PER_MINUTE)", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ SERVICE_API_KEY: APP_A, ADMIN_API_KEY: ADMIN, AUTH_FAILURES_PER_MINUTE: "3" })
  })
  afterAll(() => gw.close())

  it("answers 429 with retry-after once a client has sent too many wrong keys, without checking the key", async () => {
    // Missing keys and keys of the other kind guess nothing: they do not count.
    for (let i = 0; i < 5; i++) expectError(await gw.request("GET", "/api/profiles"), 401, "missing_api_key")
    expectError(await gw.request("GET", "/api/profiles", { headers: bearer(APP_A) }), 403, "insufficient_scope")
    for (let i = 0; i < 3; i++) {
      expectError(
        await gw.request("GET", "/api/profiles", { headers: bearer(`sk-guess-${i}`) }),
        401,
        "invalid_api_key"
      )
    }
    const locked = await gw.request("GET", "/api/profiles", { headers: bearer("sk-guess-4") })
    expect(expectError(locked, 429, "rate_limit_exceeded")).toContain("wrong API key")
    expect(locked.body).toMatchObject({ error: { type: "rate_limit_error" } })
    expectRetryAfter(locked.headers)
    // Now even the right key is not looked at, on every guarded path; a spoofed X-Forwarded-For changes nothing.
    expectError(await gw.request("GET", "/api/profiles", { headers: bearer(ADMIN) }), 429, "rate_limit_exceeded")
    expectError(
      await gw.request("GET", "/v1/models", { headers: { ...bearer(APP_A), "x-forwarded-for": "198.51.100.77" } }),
      429,
      "rate_limit_exceeded"
    )
    // Public paths stay open.
    expect((await gw.request("GET", "/health")).status).toBe(200)
  })
})

describe("wrong keys behind a trusted proxy (TRUSTED_PROXIES)", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({
      ADMIN_API_KEY: ADMIN,
      AUTH_FAILURES_PER_MINUTE: "2",
      TRUSTED_PROXIES: "127.0.0.1, 10.0.0.0/8"
    })
  })
  afterAll(() => gw.close())

  it("counts each forwarded client on its own", async () => {
    const from = (client: string, key: string) =>
      gw.request("GET", "/api/profiles", { headers: { ...bearer(key), "x-forwarded-for": `${client}, 10.1.2.3` } })
    for (let i = 0; i < 2; i++) expectError(await from("203.0.113.5", "sk-wrong"), 401, "invalid_api_key")
    expectError(await from("203.0.113.5", ADMIN), 429, "rate_limit_exceeded")
    expect((await from("203.0.113.6", ADMIN)).status).toBe(200)
  })
})

describe("per app key on /v1 (RATE_LIMIT_KEY_PER_MINUTE) and per client on /api (RATE_LIMIT_API_PER_MINUTE)", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-upstream",
      SERVICE_API_KEY: `${APP_A},${APP_B}`,
      ADMIN_API_KEY: ADMIN,
      RATE_LIMIT_KEY_PER_MINUTE: "3",
      RATE_LIMIT_API_PER_MINUTE: "2"
    })
  })
  afterAll(() => gw.close())

  it("reports the key's bucket in OpenAI's headers and refuses with 429 once it is empty", async () => {
    for (const remaining of [2, 1, 0]) {
      const res = await gw.request("GET", "/v1/models", { headers: bearer(APP_A) })
      expect(res.status).toBe(200)
      expect(res.headers.get("x-ratelimit-limit-requests")).toBe("3")
      expect(res.headers.get("x-ratelimit-remaining-requests")).toBe(String(remaining))
      expect(res.headers.get("x-ratelimit-reset-requests")).toMatch(/^(\d+ms|(\d+m)?\d+(\.\d+)?s)$/)
    }
    const refused = await gw.request("GET", "/v1/models", { headers: bearer(APP_A) })
    expect(expectError(refused, 429, "rate_limit_exceeded")).toContain("API key")
    expect(refused.headers.get("x-ratelimit-remaining-requests")).toBe("0")
    expectRetryAfter(refused.headers)
    // The other app key has a bucket of its own.
    expect((await gw.request("GET", "/v1/models", { headers: bearer(APP_B) })).status).toBe(200)
  })

  it("is surfaced by the official openai SDK as a RateLimitError", async () => {
    const client = new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: APP_A,
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": "u" }
    })
    const error = await client.chat.completions
      .create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    expect(error).toMatchObject({ status: 429, code: "rate_limit_exceeded", type: "rate_limit_error" })
  })

  it("limits each client on the management API, and stores nothing past the limit", async () => {
    for (const remaining of [1, 0]) {
      const res = await gw.request("GET", "/api/profiles", { headers: bearer(ADMIN) })
      expect(res.status).toBe(200)
      expect(res.headers.get("x-ratelimit-limit-requests")).toBe("2")
      expect(res.headers.get("x-ratelimit-remaining-requests")).toBe(String(remaining))
    }
    const before = await gw.counts()
    const refused = await gw.request("POST", "/api/profiles", {
      json: { externalId: "too-many" },
      headers: bearer(ADMIN)
    })
    expectError(refused, 429, "rate_limit_exceeded")
    expectRetryAfter(refused.headers)
    expect(await gw.counts()).toEqual(before)
    // /metrics is not part of the management API's budget, and counts the refusals.
    const samples = await scrape(gw, bearer(ADMIN))
    expect(samples.get(`gateway_rate_limited_total{scope="key"}`)).toBe(2)
    expect(samples.get(`gateway_rate_limited_total{scope="client"}`)).toBe(1)
  })
})
