import { Readable } from "node:stream"
import { gzipSync } from "node:zlib"
import OpenAI, { toFile } from "openai"
import { request as undiciRequest } from "undici"
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

const APP_KEY = "sk-gateway-app-key-passthrough"
const UPSTREAM_KEY = "sk-upstream-default-key"
const ANTHROPIC_KEY = "sk-ant-passthrough-key"

let gw: TestGateway
let up: FakeUpstream
let anthropic: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  anthropic = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: up.url,
    ANTHROPIC_BASE_URL: anthropic.url,
    UPSTREAM_API_KEY: UPSTREAM_KEY,
    SERVICE_API_KEY: APP_KEY,
    // Small, to show that passed-through bodies are not held to the limit of bodies the gateway reads.
    MAX_REQUEST_BYTES: "4096"
  })
})
afterAll(async () => {
  await gw.close()
  await up.close()
  await anthropic.close()
})
beforeEach(() => {
  up.reset()
  anthropic.reset()
})

const client = (headers: Record<string, string> = {}) =>
  new OpenAI({ baseURL: `${gw.baseUrl}/v1`, apiKey: APP_KEY, maxRetries: 0, defaultHeaders: headers })

/** Whatever of the gateway's own the provider must never see. */
const expectNothingOfTheGateway = (headers: Readonly<Record<string, unknown>>) => {
  expect(headers["authorization"]).toBe(`Bearer ${UPSTREAM_KEY}`)
  expect(JSON.stringify(headers)).not.toContain(APP_KEY)
  expect(
    Object.keys(headers).filter((name) => name.startsWith("x-service-") || name.startsWith("x-upstream-"))
  ).toEqual([])
}

describe("a /v1 call the gateway does not read", () => {
  it("embeddings.create reaches the provider as sent, with the provider key, and the answer comes back", async () => {
    const embeddings = await client({ "X-Service-Id": "someone" }).embeddings.create({
      model: "text-embedding-3-small",
      input: ["a", "b"]
    })
    expect(embeddings.data).toHaveLength(2)
    expect(up.requests).toHaveLength(1)
    const [sent] = up.requests
    expect(sent).toMatchObject({ method: "POST", path: "/v1/embeddings" })
    expect(sent!.body).toMatchObject({ model: "text-embedding-3-small", input: ["a", "b"] })
    expectNothingOfTheGateway(sent!.headers)
    // The SDK's own headers go on as sent.
    expect(sent!.headers["x-stainless-lang"]).toBe("js")
    // Nothing is recorded: no user, no profile.
    expect(await gw.query("SELECT 1 FROM profiles")).toHaveLength(0)
  })

  it("models.retrieve reaches GET /models/{id}", async () => {
    up.enqueue({ kind: "json", status: 200, body: { id: "gpt-x", object: "model", created: 1, owned_by: "someone" } })
    const model = await client().models.retrieve("gpt-x")
    expect(model.owned_by).toBe("someone")
    expect(up.requests[0]).toMatchObject({ method: "GET", path: "/v1/models/gpt-x" })
  })

  it("a file upload arrives byte for byte, multipart boundary and all, even beyond MAX_REQUEST_BYTES", async () => {
    const content = Buffer.from(Array.from({ length: 64 * 1024 }, (_, index) => index % 256))
    up.enqueue({
      kind: "json",
      status: 200,
      body: {
        id: "file-1",
        object: "file",
        bytes: content.length,
        created_at: 1,
        filename: "data.bin",
        purpose: "batch"
      }
    })
    const file = await client().files.create({ file: await toFile(content, "data.bin"), purpose: "batch" })
    expect(file.id).toBe("file-1")
    const [sent] = up.requests
    expect(sent).toMatchObject({ method: "POST", path: "/v1/files" })
    expect(sent!.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/)
    expect(sent!.bytes.includes(content)).toBe(true)
    expectNothingOfTheGateway(sent!.headers)
  })

  it("keeps the method and the query, and relays the provider's status, headers and body as sent", async () => {
    const body = Buffer.from('{"error":{"message":"No such file","type":"invalid_request_error","code":null}}  ')
    up.enqueue({
      kind: "bytes",
      status: 404,
      headers: { "content-type": "application/json", "x-request-id": "req_42", "openai-processing-ms": "7" },
      body
    })
    const res = await undiciRequest(`${gw.baseUrl}/v1/files/file-9?include=content&limit=2`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${APP_KEY}`, "openai-organization": "org-1" }
    })
    expect(res.statusCode).toBe(404)
    expect(Buffer.from(await res.body.arrayBuffer())).toEqual(body)
    expect(res.headers).toMatchObject({
      "x-request-id": "req_42",
      "openai-processing-ms": "7",
      "content-length": String(body.length)
    })
    expect(up.requests[0]).toMatchObject({ method: "DELETE", path: "/v1/files/file-9?include=content&limit=2" })
    expect(up.requests[0]!.headers["openai-organization"]).toBe("org-1")
  })

  it("streams an upload to the provider while the client is still sending it", async () => {
    let sendRest: (() => void) | undefined
    const rest = new Promise<void>((resolve) => (sendRest = resolve))
    async function* upload() {
      yield Buffer.from("first part;")
      await rest
      yield Buffer.from("second part")
    }
    up.handler = () => ({ kind: "json", status: 200, body: { ok: true } })
    const started = undiciRequest(`${gw.baseUrl}/v1/uploads/up-1/parts`, {
      method: "POST",
      headers: { authorization: `Bearer ${APP_KEY}`, "content-type": "application/octet-stream" },
      body: Readable.from(upload())
    })
    // The provider's side sees the request (its headers) before the client has sent the second part.
    await up.received((request) => request.path === "/v1/uploads/up-1/parts")
    sendRest!()
    const res = await started
    expect(res.statusCode).toBe(200)
    await res.body.text()
    expect(up.requests[0]!.rawBody).toBe("first part;second part")
  })

  it("streams the provider's answer to the client as it comes", async () => {
    up.enqueue({ kind: "sse", frames: ["data: one\n\n"], then: "stall" })
    const res = await undiciRequest(`${gw.baseUrl}/v1/threads/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${APP_KEY}`, "content-type": "application/json" },
      body: '{"stream":true}'
    })
    expect(res.headers["content-type"]).toBe("text/event-stream")
    const reader = (res.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]()
    const first = await reader.next()
    expect(first.value?.toString()).toBe("data: one\n\n")
    res.body.destroy()
  })

  it("goes to Anthropic with its key when X-Upstream-Provider names it, keeping the client's API version", async () => {
    anthropic.enqueue({ kind: "json", status: 200, body: { input_tokens: 12 } })
    const res = await gw.request("POST", "/v1/messages/count_tokens", {
      json: { model: "claude-x", messages: [{ role: "user", content: "hi" }] },
      headers: {
        authorization: `Bearer ${APP_KEY}`,
        "x-upstream-provider": "anthropic",
        "x-upstream-key": ANTHROPIC_KEY,
        "anthropic-version": "2024-01-01"
      }
    })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ input_tokens: 12 })
    const [sent] = anthropic.requests
    expect(sent).toMatchObject({ method: "POST", path: "/v1/messages/count_tokens" })
    expect(sent!.headers["x-api-key"]).toBe(ANTHROPIC_KEY)
    expect(sent!.headers["anthropic-version"]).toBe("2024-01-01")
    expect(sent!.headers["authorization"]).toBeUndefined()
    expect(up.requests).toHaveLength(0)
  })

  it("still needs the app key, and names what is wrong without calling the provider", async () => {
    expectError(await gw.request("POST", "/v1/embeddings", { json: { input: "x" } }), 401, "missing_api_key")
    expectError(
      await gw.request("POST", "/v1/embeddings", {
        json: { input: "x" },
        headers: { authorization: `Bearer ${APP_KEY}`, "x-upstream-provider": "mistral" }
      }),
      400,
      "invalid_upstream_provider"
    )
    expect(up.requests).toHaveLength(0)
  })

  it("answers 502 upstream_unreachable when the provider cannot be reached", async () => {
    const unreachable = await startGateway({
      UPSTREAM_BASE_URL: "http://127.0.0.1:9/v1",
      UPSTREAM_API_KEY: UPSTREAM_KEY
    })
    try {
      expectError(
        await unreachable.request("POST", "/v1/embeddings", { json: { input: "x" } }),
        502,
        "upstream_unreachable"
      )
    } finally {
      await unreachable.close()
    }
  })
})

describe("a passed-through call whose provider answers with an error echoing the key", () => {
  // Not key-like (no `sk-`): only redacting the keys the gateway sent hides them.
  const OPERATOR_KEY = "operator-provider-secret-7f3a9c"
  const BOUND_KEY = "tenant-provider-secret-42b8e1"
  const ADMIN_KEY = "sk-admin-passthrough-errors"
  let provider: FakeUpstream
  let errors: TestGateway
  let boundAppKey: string
  // Everything the gateway logs while it runs (at every level), kept from the console.
  const logged: Array<string> = []
  const spies: Array<{ readonly mockRestore: () => void }> = []
  beforeAll(async () => {
    for (const level of ["log", "info", "warn", "error", "debug"] as const)
      spies.push(
        vi.spyOn(console, level).mockImplementation((...parts: Array<unknown>) => {
          logged.push(parts.map(String).join(" "))
        })
      )
    provider = await startFakeUpstream()
    errors = await startGateway({
      UPSTREAM_BASE_URL: provider.url,
      UPSTREAM_API_KEY: OPERATOR_KEY,
      SERVICE_API_KEY: APP_KEY,
      ADMIN_API_KEY: ADMIN_KEY,
      KEY_ENCRYPTION_KEY: "b".repeat(64),
      // Everything the gateway logs, to show the key is in none of it.
      LOG_LEVEL: "all",
      LOG_FORMAT: "json"
    })
    const created = await errors.request<{ key: string }>("POST", "/api/keys", {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
      json: { namespace: "acme", upstream: { provider: "openai", apiKey: BOUND_KEY } }
    })
    expect(created.status).toBe(201)
    boundAppKey = created.body.key
  })
  afterAll(async () => {
    await errors.close()
    await provider.close()
    for (const spy of spies) spy.mockRestore()
  })
  beforeEach(() => {
    provider.reset()
    // OpenAI's 401 names the key it was given.
    provider.handler = (request) => {
      const sent = String(request.headers["authorization"] ?? "").replace(/^Bearer /, "")
      return {
        kind: "json",
        status: 401,
        headers: { "x-request-id": "req_401" },
        body: {
          error: {
            message: `Incorrect API key provided: ${sent}. You can find your API key at https://platform.openai.com.`,
            type: "invalid_request_error",
            param: null,
            code: "invalid_api_key"
          }
        }
      }
    }
  })

  /** Each call through the gateway, by the app with `key`; each rejects with the provider's 401. */
  const calls = (key: string) => {
    const openai = new OpenAI({ baseURL: `${errors.baseUrl}/v1`, apiKey: key, maxRetries: 0 })
    return {
      embeddings: () => openai.embeddings.create({ model: "text-embedding-3-small", input: "x" }),
      files: () => openai.files.create({ file: new File(["data"], "data.jsonl"), purpose: "batch" }),
      moderations: () => openai.moderations.create({ input: "x" })
    }
  }

  for (const [who, appKey, sentKey] of [
    ["the operator's key", () => APP_KEY, OPERATOR_KEY],
    ["a tenant's bound provider key", () => boundAppKey, BOUND_KEY]
  ] as const) {
    it(`gives the client the provider's status, headers and message, never ${who}`, async () => {
      logged.length = 0
      for (const [name, call] of Object.entries(calls(appKey()))) {
        const failure: unknown = await call().then(
          () => expect.unreachable(`${name} succeeded`),
          (error: unknown) => error
        )
        expect(failure).toBeInstanceOf(OpenAI.APIError)
        const error = failure as InstanceType<typeof OpenAI.APIError>
        expect({ name, status: error.status }).toEqual({ name, status: 401 })
        expect(error.headers?.get("x-request-id")).toBe("req_401")
        expect(error.error).toMatchObject({ code: "invalid_api_key", type: "invalid_request_error" })
        expect(error.message).toContain("Incorrect API key provided: [redacted].")
        expect(JSON.stringify({ message: error.message, body: error.error })).not.toContain(sentKey)
      }
      // The provider was asked with that key: it was the gateway's answer that hid it.
      expect(provider.requests.map((request) => request.headers["authorization"])).toEqual(
        Array(3).fill(`Bearer ${sentKey}`)
      )
      // The requests were logged (at debug), the key nowhere.
      expect(logged.filter((line) => line.includes('"handled"') && line.includes('"status":401'))).toHaveLength(3)
      expect(logged.join("\n")).not.toContain(sentKey)
    })
  }

  it("fixes the length of the body it rewrote and reads a gzipped error too", async () => {
    const body = Buffer.from(JSON.stringify({ error: { message: `Incorrect API key provided: ${OPERATOR_KEY}` } }))
    provider.enqueue(
      { kind: "bytes", status: 401, headers: { "content-type": "application/json" }, body },
      {
        kind: "bytes",
        status: 401,
        headers: { "content-type": "application/json", "content-encoding": "gzip" },
        body: gzipSync(body)
      }
    )
    for (const encoding of ["identity", "gzip"]) {
      const res = await undiciRequest(`${errors.baseUrl}/v1/embeddings`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${APP_KEY}`,
          "content-type": "application/json",
          "accept-encoding": encoding
        },
        body: '{"input":"x"}'
      })
      const text = await res.body.text()
      expect({ encoding, status: res.statusCode }).toEqual({ encoding, status: 401 })
      expect(text).toBe(JSON.stringify({ error: { message: "Incorrect API key provided: [redacted]" } }))
      expect(res.headers["content-length"]).toBe(String(Buffer.byteLength(text)))
      expect(res.headers["content-encoding"]).toBeUndefined()
      expect(res.headers["content-type"]).toBe("application/json")
    }
  })
})
