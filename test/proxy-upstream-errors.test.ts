import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { freePort } from "./support/serviceProcess.ts"
import { expectError } from "./support/wire.ts"

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({ UPSTREAM_BASE_URL: up.url, UPSTREAM_FIRST_BYTE_TIMEOUT_MS: "500" })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})
beforeEach(() => up.reset())

const KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"

const client = () =>
  new OpenAI({
    baseURL: `${gw.baseUrl}/v1`,
    apiKey: "unused",
    maxRetries: 0,
    defaultHeaders: { "X-Service-Id": "errors", "X-Upstream-Key": KEY }
  })

const create = () =>
  client().chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] })

describe("upstream errors keep their status", () => {
  it("maps an upstream 401 to 401 upstream_error without echoing the key", async () => {
    up.enqueue({
      kind: "json",
      status: 401,
      body: {
        error: {
          message: `Incorrect API key provided: ${KEY.slice(0, 8)}****6789. Also ${KEY}`,
          type: "invalid_request_error",
          code: "invalid_api_key",
          param: null
        }
      }
    })
    const error = await create().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError)
    expect(error).toMatchObject({ status: 401, code: "upstream_error", type: "invalid_request_error" })
    const message = (error as InstanceType<typeof OpenAI.APIError>).message
    expect(message).toContain("Incorrect API key provided")
    expect(message).toContain("invalid_api_key")
    expect(message).not.toContain(KEY)
    expect(message).not.toContain(KEY.slice(0, 8))
  })

  it("keeps 429 with retry-after and the rate-limit headers", async () => {
    up.enqueue({
      kind: "json",
      status: 429,
      body: { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } },
      headers: {
        "retry-after": "7",
        "x-ratelimit-remaining-requests": "0",
        "x-request-id": "req_limited",
        "set-cookie": "a=b"
      }
    })
    const res = await gw.request("POST", "/v1/chat/completions", {
      json: { model: "m", messages: [{ role: "user", content: "hi" }] },
      headers: { "x-service-id": "errors", "x-upstream-key": KEY }
    })
    expect(expectError(res, 429, "upstream_error")).toContain("Rate limit reached")
    expect(res.headers.get("retry-after")).toBe("7")
    expect(res.headers.get("x-ratelimit-remaining-requests")).toBe("0")
    expect(res.headers.get("x-request-id")).toBe("req_limited")
    expect(res.headers.get("set-cookie")).toBeNull()
    up.enqueue({
      kind: "json",
      status: 429,
      body: { error: { message: "slow down" } },
      headers: { "retry-after": "1" }
    })
    const error = await create().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
  })

  it("keeps 500 and 400 and a non-JSON error body", async () => {
    up.enqueue({
      kind: "json",
      status: 500,
      body: { error: { message: "The server had an error", type: "server_error" } }
    })
    expect(await create().catch((e: unknown) => e)).toMatchObject({ status: 500, code: "upstream_error" })
    up.enqueue({
      kind: "json",
      status: 400,
      body: { error: { message: "context_length_exceeded", param: "messages", code: "context_length_exceeded" } }
    })
    expect(await create().catch((e: unknown) => e)).toMatchObject({
      status: 400,
      code: "upstream_error",
      param: "messages"
    })
    up.enqueue({ kind: "text", status: 503, body: "<html>Service Unavailable</html>" })
    const error = await create().catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 503, code: "upstream_error" })
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toContain("Service Unavailable")
  })

  it("answers 504 upstream_timeout when no response headers come in time", async () => {
    up.enqueue({ kind: "hang" })
    const error = await create().catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 504, code: "upstream_timeout" })
  })

  it("answers 502 upstream_unreachable when nothing listens", async () => {
    const port = await freePort()
    const dead = await startGateway({ UPSTREAM_BASE_URL: `http://127.0.0.1:${port}/v1`, UPSTREAM_API_KEY: KEY })
    try {
      const res = await dead.request("POST", "/v1/chat/completions", {
        json: { model: "m", messages: [{ role: "user", content: "hi" }] },
        headers: { "x-service-id": "errors" }
      })
      const message = expectError(res, 502, "upstream_unreachable")
      expect(message).not.toContain(String(port))
      const models = await dead.request("GET", "/v1/models")
      expectError(models, 502, "upstream_unreachable")
    } finally {
      await dead.close()
    }
  })

  it("maps errors of /v1/models the same way", async () => {
    up.enqueue({ kind: "json", status: 401, body: { error: { message: "bad key" } } })
    const res = await gw.request("GET", "/v1/models", { headers: { "x-upstream-key": KEY } })
    expectError(res, 401, "upstream_error")
    expectError(await gw.request("GET", "/v1/models"), 401, "missing_upstream_key")
  })
})
