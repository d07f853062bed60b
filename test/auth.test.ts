import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

const KEY = "sk-service-test-key-0123456789"

describe("with SERVICE_API_KEY set", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ SERVICE_API_KEY: KEY })
  })
  afterAll(() => gw.close())

  it("answers 401 missing_api_key without an Authorization header, and stores nothing", async () => {
    const before = await gw.counts()
    const res = await gw.request("POST", "/api/profiles", { json: { externalId: "intruder" } })
    expectError(res, 401, "missing_api_key")
    expect(res.body).toMatchObject({ error: { type: "authentication_error" } })
    expect(await gw.counts()).toEqual(before)
  })

  it.each([
    ["a wrong key", `Bearer ${KEY}x`],
    ["a prefix of the key", `Bearer ${KEY.slice(0, 10)}`],
    ["another scheme", `Basic ${KEY}`],
    ["a bare key", KEY],
    ["an empty bearer", "Bearer "]
  ])("answers 401 invalid_api_key for %s", async (_, authorization) => {
    expectError(await gw.request("GET", "/api/profiles", { headers: { authorization } }), 401, "invalid_api_key")
  })

  it.each(["Bearer", "bearer", "BEARER"])("accepts the %s scheme", async (scheme) => {
    const res = await gw.request("GET", "/api/profiles", { headers: { authorization: `${scheme} ${KEY}` } })
    expect(res.status).toBe(200)
  })

  it("accepts the key in x-api-key, as Anthropic's SDKs send it, and refuses a wrong one", async () => {
    expect((await gw.request("GET", "/api/profiles", { headers: { "x-api-key": KEY } })).status).toBe(200)
    expectError(
      await gw.request("GET", "/api/profiles", { headers: { "x-api-key": `${KEY}x` } }),
      401,
      "invalid_api_key"
    )
    // Authorization, when present, is the one that counts.
    expectError(
      await gw.request("GET", "/api/profiles", { headers: { authorization: "Bearer sk-wrong", "x-api-key": KEY } }),
      401,
      "invalid_api_key"
    )
  })

  it("guards /v1 and unknown paths before routing", async () => {
    expectError(await gw.request("GET", "/v1/models"), 401, "missing_api_key")
    expectError(await gw.request("GET", "/api/does-not-exist"), 401, "missing_api_key")
    expectError(await gw.request("GET", "/API/profiles"), 401, "missing_api_key")
  })

  it("leaves health, readiness and the API description open", async () => {
    for (const path of ["/health", "/ready", "/openapi.json", "/docs"]) {
      expect((await gw.request("GET", path)).status).toBe(200)
    }
  })

  it("is surfaced by the official openai SDK with status and code", async () => {
    const client = new OpenAI({ baseURL: `${gw.baseUrl}/v1`, apiKey: "wrong", maxRetries: 0 })
    const error = await client.models.list().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError)
    expect(error).toMatchObject({ status: 401, code: "invalid_api_key" })
  })
})

describe("without SERVICE_API_KEY", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ SERVICE_API_KEY: "" })
  })
  afterAll(() => gw.close())

  it("accepts requests with or without a key", async () => {
    expect((await gw.request("GET", "/api/profiles")).status).toBe(200)
    expect((await gw.request("GET", "/api/profiles", { headers: { authorization: "Bearer anything" } })).status).toBe(
      200
    )
  })
})
