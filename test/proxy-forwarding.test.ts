import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { completion, eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { injectedText } from "./support/injected.ts"
import { expectError } from "./support/wire.ts"

const DEFAULT_KEY = "sk-test-default-upstream"

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({ UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: DEFAULT_KEY, MAX_MESSAGES: "50" })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})
beforeEach(() => up.reset())

const client = (headers: Record<string, string> = {}) =>
  new OpenAI({ baseURL: `${gw.baseUrl}/v1`, apiKey: "unused", maxRetries: 0, defaultHeaders: headers })

const chat = (json: unknown, headers: Record<string, string> = {}) =>
  gw.request("POST", "/v1/chat/completions", { json, headers })

describe("forwarding", () => {
  it("forwards every field unchanged except `service`", async () => {
    const body = {
      model: "gpt-test",
      messages: [
        { role: "developer", content: [{ type: "text", text: "dev" }] },
        {
          role: "user",
          content: [
            { type: "text", text: "look" },
            { type: "image_url", image_url: { url: "https://x/y.png" } }
          ],
          name: "u"
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: "{}" } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "42" }
      ],
      tools: [
        { type: "function", function: { name: "f", description: "d", parameters: { type: "object", properties: {} } } }
      ],
      tool_choice: "auto",
      response_format: { type: "json_object" },
      n: 2,
      stop: ["END"],
      seed: 7,
      temperature: 0.3,
      max_completion_tokens: 99,
      logprobs: true,
      top_logprobs: 2,
      user: "end-user-1",
      metadata: { trace: "abc" },
      future_field: { nested: [1, 2, 3] },
      service: { skipInjection: true, skipExtraction: true }
    }
    const response = await chat(body)
    expect(response.status).toBe(200)
    const { service: _, ...expected } = body
    expect(up.requests[0]!.body).toEqual(expected)
    expect(up.requests[0]!.path).toBe("/v1/chat/completions")
  })

  it("relays the answer unchanged: all choices, tool calls, usage, fingerprint, request id", async () => {
    const answer = completion({
      choices: 2,
      toolCalls: [{ id: "call_9", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }],
      content: null
    })
    up.enqueue({
      kind: "json",
      status: 200,
      body: answer,
      headers: { "x-request-id": "req_upstream_1", "openai-processing-ms": "12" }
    })
    const { data, response } = await client({ "X-Service-Id": "relay" })
      .chat.completions.create({
        model: "gpt-test",
        n: 2,
        messages: [{ role: "user", content: "hi" }]
      })
      .withResponse()
    expect(data).toEqual(answer)
    expect(response.headers.get("x-request-id")).toBe("req_upstream_1")
    expect(response.headers.get("openai-processing-ms")).toBe("12")
  })

  it("authenticates upstream with X-Upstream-Key, else UPSTREAM_API_KEY, and never leaks gateway headers", async () => {
    await chat(
      { model: "gpt-test", messages: [{ role: "user", content: "hi" }] },
      {
        "x-service-id": "headers",
        "x-upstream-key": "sk-caller-own-key",
        "x-upstream-base-url": "http://169.254.169.254/latest",
        "x-service-traits": "[]",
        cookie: "session=secret",
        "openai-organization": "org-123"
      }
    )
    await chat({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] }, { "x-service-id": "headers" })
    const [own, fallback] = up.requests
    expect(own!.headers["authorization"]).toBe("Bearer sk-caller-own-key")
    expect(own!.headers["openai-organization"]).toBe("org-123")
    for (const name of Object.keys(own!.headers)) expect(name).not.toMatch(/^(x-service|x-upstream|cookie)/)
    expect(fallback!.headers["authorization"]).toBe(`Bearer ${DEFAULT_KEY}`)
    // The caller's base URL was ignored: the request went to the configured upstream.
    expect(up.requests).toHaveLength(2)
  })

  it("does not forward the gateway's own Authorization", async () => {
    const secured = await startGateway({ UPSTREAM_BASE_URL: up.url, SERVICE_API_KEY: "gateway-secret-key" })
    try {
      const res = await secured.request("POST", "/v1/chat/completions", {
        json: { model: "gpt-test", messages: [{ role: "user", content: "hi" }] },
        headers: { authorization: "Bearer gateway-secret-key", "x-service-id": "auth", "x-upstream-key": "sk-caller" }
      })
      expect(res.status).toBe(200)
      expect(up.requests[0]!.headers["authorization"]).toBe("Bearer sk-caller")
      expect(up.requests[0]!.rawBody).not.toContain("gateway-secret-key")
    } finally {
      await secured.close()
    }
  })

  it("answers 401 missing_upstream_key when no key is available, calling nobody and storing nothing", async () => {
    const keyless = await startGateway({ UPSTREAM_BASE_URL: up.url })
    try {
      const before = await keyless.counts()
      const res = await keyless.request("POST", "/v1/chat/completions", {
        json: { model: "gpt-test", messages: [{ role: "user", content: "hi" }] },
        headers: { "x-service-id": "nokey" }
      })
      expectError(res, 401, "missing_upstream_key")
      expect(up.requests).toHaveLength(0)
      expect(await keyless.counts()).toEqual(before)
    } finally {
      await keyless.close()
    }
  })

  it("lists the upstream's models with the caller's or the default key", async () => {
    const models = await client({ "X-Upstream-Key": "sk-models-key" }).models.list()
    expect(models.data.map((m) => m.id)).toEqual(["gpt-test"])
    expect(up.requests[0]).toMatchObject({ method: "GET", path: "/v1/models" })
    expect(up.requests[0]!.headers["authorization"]).toBe("Bearer sk-models-key")
    await client().models.list()
    expect(up.requests[1]!.headers["authorization"]).toBe(`Bearer ${DEFAULT_KEY}`)
  })
})

describe("the user id", () => {
  const profileOf = async (externalId: string) =>
    (await gw.request("GET", `/api/profiles/${encodeURIComponent(externalId)}`)).status === 200

  it("comes from X-Service-Id, then safety_identifier, then `user`, then metadata.profile_id", async () => {
    const messages = [{ role: "user", content: "hi" }]
    const everySource = {
      model: "m",
      messages,
      safety_identifier: "from-safety",
      user: "from-user",
      metadata: { profile_id: "from-meta" }
    }
    await chat(everySource, { "x-service-id": " from-header " })
    expect(await profileOf("from-header")).toBe(true)
    expect(await profileOf("from-safety")).toBe(false)
    await chat(everySource)
    expect(await profileOf("from-safety")).toBe(true)
    expect(await profileOf("from-user")).toBe(false)
    await chat({ model: "m", messages, user: "from-user", metadata: { profile_id: "from-meta" } })
    expect(await profileOf("from-user")).toBe(true)
    expect(await profileOf("from-meta")).toBe(false)
    await chat({ model: "m", messages, metadata: { profile_id: "from-meta" } })
    expect(await profileOf("from-meta")).toBe(true)
    // The provider gets the field as sent: it is OpenAI's, not the gateway's.
    expect(up.requests.filter((request) => request.body?.["safety_identifier"] === "from-safety")).toHaveLength(2)
  })

  it("creates one profile under concurrent first requests", async () => {
    await Promise.all(
      Array.from({ length: 6 }, () =>
        chat({ model: "m", messages: [{ role: "user", content: "x" }] }, { "x-service-id": "burst" })
      )
    )
    expect(await gw.query("SELECT 1 FROM profiles WHERE external_id = 'burst'")).toHaveLength(1)
  })

  it("is required: 400 missing_user_id, and nothing is called or stored", async () => {
    const before = (await gw.counts()).profiles
    const error = await client()
      .chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect(error).toMatchObject({ status: 400, code: "missing_user_id" })
    expect((error as { error: { message: string } }).error.message).toBe(
      "Identify the user with the X-Service-Id header or the body's `safety_identifier`, `user` or `metadata.profile_id`"
    )
    expect(up.requests).toHaveLength(0)
    expect((await gw.counts()).profiles).toBe(before)
  })

  it("rejects an id over 256 characters", async () => {
    expectError(
      await chat({ model: "m", messages: [{ role: "user", content: "x" }] }, { "x-service-id": "x".repeat(257) }),
      400,
      "invalid_user_id"
    )
    expectError(await chat({ model: "m", messages: [{ role: "user", content: "x" }], user: 42 }), 400, "invalid_user")
  })
})

describe("per-request traits", () => {
  it("merge the X-Service-Traits header and service.traits over the schema, the body winning by key", async () => {
    await gw.request("POST", "/api/profiles", { json: { externalId: "req-traits" } })
    await gw.request("PUT", "/api/profiles/req-traits/traits/name", { json: { value: "Ana" } })
    await gw.request("PUT", "/api/profiles/req-traits/traits/plan", { json: { value: "pro" } })
    const header = JSON.stringify([
      { key: "name", valueType: "string", injection: { enabled: true, template: "HEADER {{value}}" } },
      { key: "plan", valueType: "string", injection: { enabled: true, template: "Plan: {{value}}" } }
    ])
    const res = await chat(
      {
        model: "m",
        messages: [{ role: "user", content: "hi" }],
        service: {
          traits: [
            {
              key: "name",
              valueType: "string",
              extraction: { enabled: false },
              injection: { enabled: true, template: "BODY {{value}}" }
            }
          ]
        }
      },
      { "x-service-id": "req-traits", "x-service-traits": header }
    )
    expect(res.status).toBe(200)
    const system = injectedText(up.requests[0]!.body)
    expect(system).toContain("- BODY Ana")
    expect(system).not.toContain("HEADER")
    expect(system).toContain("- Plan: pro")
    const [job] = await eventually(async () => {
      const rows = await gw.query<{ trait_definitions: Array<{ key: string; extraction?: { enabled: boolean } }> }>(
        "SELECT j.trait_definitions FROM extraction_jobs j JOIN profiles p ON p.id = j.profile_id WHERE p.external_id = 'req-traits'"
      )
      return rows.length > 0 ? rows : undefined
    })
    expect(job!.trait_definitions.map((t) => t.key).sort()).toEqual(["name", "plan"])
    expect(job!.trait_definitions.find((t) => t.key === "name")!.extraction).toEqual({ enabled: false })
  })

  it("can switch a trait's injection off for one request", async () => {
    await gw.request("POST", "/api/profiles", { json: { externalId: "hide-trait" } })
    await gw.request("PUT", "/api/profiles/hide-trait/traits/name", { json: { value: "Secret Name" } })
    await chat(
      {
        model: "m",
        messages: [{ role: "user", content: "hi" }],
        service: { traits: [{ key: "name", valueType: "string", injection: { enabled: false } }] }
      },
      { "x-service-id": "hide-trait" }
    )
    expect(JSON.stringify(up.requests[0]!.body)).not.toContain("Secret Name")
  })

  it.each([
    ["a malformed header", { "x-service-traits": "[{not json" }, {}],
    ["a header that is not an array", { "x-service-traits": '{"key":"a"}' }, {}],
    ["an unknown value type", {}, { traits: [{ key: "a", valueType: "date" }] }],
    ["an enum without values", {}, { traits: [{ key: "a", valueType: "enum" }] }],
    ["a bad key", {}, { traits: [{ key: "1 bad", valueType: "string" }] }],
    ["a non-boolean skip flag", {}, { skipInjection: "yes" }]
  ])("rejects %s with 400 invalid_service_options", async (_, headers, service) => {
    const res = await chat(
      { model: "m", messages: [{ role: "user", content: "hi" }], service },
      { "x-service-id": "bad-options", ...headers }
    )
    expectError(res, 400, "invalid_service_options")
    expect(up.requests).toHaveLength(0)
    expect(await gw.query("SELECT 1 FROM profiles WHERE external_id = 'bad-options'")).toHaveLength(0)
  })
})

describe("bad input", () => {
  it.each([
    ["malformed JSON", '{"model": ', "invalid_json"],
    ["a JSON array", "[]", "invalid_request_body"],
    ["no model", JSON.stringify({ messages: [{ role: "user", content: "x" }] }), "missing_model"],
    ["no messages", JSON.stringify({ model: "m" }), "missing_messages"],
    ["empty messages", JSON.stringify({ model: "m", messages: [] }), "invalid_messages"],
    ["a message without a role", JSON.stringify({ model: "m", messages: [{ content: "x" }] }), "missing_messages"],
    [
      "too many messages",
      JSON.stringify({ model: "m", messages: Array(51).fill({ role: "user", content: "x" }) }),
      "too_many_messages"
    ]
  ])("rejects %s with 400, calling nobody and storing nothing", async (_, rawBody, code) => {
    expectError(
      await gw.request("POST", "/v1/chat/completions", { rawBody, headers: { "x-service-id": "bad-input" } }),
      400,
      code
    )
    expect(up.requests).toHaveLength(0)
    expect(await gw.query("SELECT 1 FROM profiles WHERE external_id = 'bad-input'")).toHaveLength(0)
  })

  it("rejects a body over MAX_REQUEST_BYTES with 413", async () => {
    const small = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: DEFAULT_KEY,
      MAX_REQUEST_BYTES: "2048"
    })
    try {
      const res = await small.request("POST", "/v1/chat/completions", {
        json: { model: "m", messages: [{ role: "user", content: "x".repeat(4096) }] },
        headers: { "x-service-id": "huge" }
      })
      expectError(res, 413, "request_too_large")
      expect(up.requests).toHaveLength(0)
      expect((await small.counts()).profiles).toBe(0)
    } finally {
      await small.close()
    }
  })
})

describe("recording", () => {
  interface Row {
    role: string
    content: string
    tool_calls: unknown
    tool_call_id: string | null
  }
  const messagesOf = (externalId: string) =>
    gw.query<Row>(
      `SELECT m.role, m.content, m.tool_calls, m.tool_call_id FROM messages m JOIN profiles p ON p.id = m.profile_id
       WHERE p.external_id = $1 ORDER BY m.created_at, m.id`,
      [externalId]
    )
  const jobsOf = (externalId: string) =>
    gw.query<{ message_ids: Array<string> }>(
      "SELECT j.message_ids FROM extraction_jobs j JOIN profiles p ON p.id = j.profile_id WHERE p.external_id = $1 ORDER BY j.created_at",
      [externalId]
    )

  it("stores only the new turn, never the history again, with a job per turn", async () => {
    const user = client({ "X-Service-Id": "recorder" })
    up.enqueue({ kind: "json", status: 200, body: completion({ content: "Hi Sam!" }) })
    await user.chat.completions.create({
      model: "m",
      messages: [
        { role: "system", content: "Be nice." },
        { role: "user", content: "I am Sam." }
      ]
    })
    await eventually(async () => ((await messagesOf("recorder")).length === 2 ? true : undefined))
    up.enqueue({ kind: "json", status: 200, body: completion({ content: "Nice to meet you." }) })
    await user.chat.completions.create({
      model: "m",
      messages: [
        { role: "system", content: "Be nice." },
        { role: "user", content: "I am Sam." },
        { role: "assistant", content: "Hi Sam!" },
        {
          role: "user",
          content: [
            { type: "text", text: "Look at this" },
            { type: "image_url", image_url: { url: "https://x/y.png" } }
          ]
        }
      ]
    })
    const rows = await eventually(async () => {
      const rows = await messagesOf("recorder")
      return rows.length === 4 ? rows : undefined
    })
    expect(rows.map((r) => [r.role, r.content])).toEqual([
      ["user", "I am Sam."],
      ["assistant", "Hi Sam!"],
      ["user", "Look at this\n[image_url]"],
      ["assistant", "Nice to meet you."]
    ])
    const jobs = await jobsOf("recorder")
    expect(jobs.map((j) => j.message_ids.length)).toEqual([2, 2])
  })

  it("records tool calls and tool results", async () => {
    const call = { id: "call_7", type: "function", function: { name: "weather", arguments: '{"city":"Oslo"}' } }
    up.enqueue({ kind: "json", status: 200, body: completion({ content: null, toolCalls: [call] }) })
    const user = client({ "X-Service-Id": "tooler" })
    await user.chat.completions.create({ model: "m", messages: [{ role: "user", content: "Weather in Oslo?" }] })
    await eventually(async () => ((await messagesOf("tooler")).length === 2 ? true : undefined))
    await user.chat.completions.create({
      model: "m",
      messages: [
        { role: "user", content: "Weather in Oslo?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_7", type: "function", function: { name: "weather", arguments: '{"city":"Oslo"}' } }]
        },
        { role: "tool", tool_call_id: "call_7", content: "5°C" }
      ]
    })
    const rows = await eventually(async () => {
      const rows = await messagesOf("tooler")
      return rows.length === 4 ? rows : undefined
    })
    expect(rows[1]).toMatchObject({ role: "assistant", content: "", tool_calls: [call] })
    expect(rows[2]).toMatchObject({ role: "tool", content: "5°C", tool_call_id: "call_7" })
  })

  it("stores the turn but enqueues no job with service.skipExtraction", async () => {
    await chat(
      { model: "m", messages: [{ role: "user", content: "hi" }], service: { skipExtraction: true } },
      { "x-service-id": "no-extract" }
    )
    await eventually(async () => ((await messagesOf("no-extract")).length === 2 ? true : undefined))
    expect(await jobsOf("no-extract")).toHaveLength(0)
  })

  it("stores nothing when the upstream fails", async () => {
    up.enqueue({ kind: "json", status: 500, body: { error: { message: "boom", type: "server_error" } } })
    await chat({ model: "m", messages: [{ role: "user", content: "hi" }] }, { "x-service-id": "failed-turn" })
    // A turn is written before its answer ends, never after: once the error is here, nothing can follow.
    expect(await messagesOf("failed-turn")).toHaveLength(0)
  })
})
