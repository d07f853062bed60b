import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const KEY = "sk-cors-app-key-0123456789"
const APP = "https://app.example.com"

const preflight = (gw: TestGateway, path: string, origin = APP) =>
  fetch(gw.baseUrl + path, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type, x-service-id, x-stainless-os"
    }
  })

const chatFrom = (gw: TestGateway, origin: string, key = KEY) =>
  fetch(`${gw.baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: {
      origin,
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      "x-service-id": "browser-user"
    },
    body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })
  })

describe("with CORS_ORIGINS set", () => {
  let gw: TestGateway
  let up: FakeUpstream
  beforeAll(async () => {
    up = await startFakeUpstream()
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-upstream",
      SERVICE_API_KEY: KEY,
      CORS_ORIGINS: `${APP}, https://admin.example.com`
    })
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  it("answers a preflight for /v1 and /api without a key, allowing the headers the SDK asks for", async () => {
    for (const path of ["/v1/chat/completions", "/api/profiles"]) {
      const res = await preflight(gw, path)
      expect(res.status).toBe(204)
      expect(res.headers.get("access-control-allow-origin")).toBe(APP)
      expect(res.headers.get("access-control-allow-methods")).toContain("POST")
      expect(res.headers.get("access-control-allow-headers")).toBe(
        "authorization, content-type, x-service-id, x-stainless-os"
      )
      expect(res.headers.get("access-control-allow-credentials")).toBeNull()
      expect(res.headers.get("vary")).toContain("Origin")
    }
    expect(up.requests).toHaveLength(0)
  })

  it("lets the page read the answer and the gateway's own headers", async () => {
    const res = await chatFrom(gw, APP)
    expect(res.status).toBe(200)
    expect(res.headers.get("access-control-allow-origin")).toBe(APP)
    const exposed = res.headers.get("access-control-expose-headers")?.split(",") ?? []
    expect(exposed).toEqual(
      expect.arrayContaining(["x-service-context", "x-service-overhead-ms", "x-service-request-id"])
    )
    expect(res.headers.get("x-service-context")).not.toBeNull()
  })

  it("puts the same headers on errors, so the page can read why it was refused", async () => {
    const res = await chatFrom(gw, APP, "sk-wrong")
    expect(res.status).toBe(401)
    expect(res.headers.get("access-control-allow-origin")).toBe(APP)
    expect(await res.json()).toMatchObject({ error: { code: "invalid_api_key" } })
  })

  it("never allows an origin that is not listed", async () => {
    const res = await preflight(gw, "/v1/chat/completions", "https://evil.example.com")
    expect(res.headers.get("access-control-allow-origin")).toBeNull()
    const answer = await chatFrom(gw, "https://evil.example.com")
    expect(answer.headers.get("access-control-allow-origin")).toBeNull()
  })

  it("leaves /health and /metrics without CORS headers", async () => {
    const res = await fetch(`${gw.baseUrl}/health`, { headers: { origin: APP } })
    expect(res.headers.get("access-control-allow-origin")).toBeNull()
  })
})

describe("without CORS_ORIGINS", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ SERVICE_API_KEY: KEY })
  })
  afterAll(() => gw.close())

  it("answers no preflight and sends no Access-Control headers", async () => {
    const res = await preflight(gw, "/v1/chat/completions")
    expect(res.status).toBe(401)
    const names: Array<string> = []
    res.headers.forEach((_, name) => names.push(name))
    expect(names.filter((name) => name.startsWith("access-control-"))).toEqual([])
  })
})
