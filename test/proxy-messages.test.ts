import Anthropic from "@anthropic-ai/sdk"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { anthropicEvent, anthropicMessage } from "./support/anthropicWire.ts"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { recordedTurn, startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

/** Anthropic's Messages API inbound: an app on the Anthropic SDK with its base URL set to the gateway. */

const APP_KEY = "sk-gateway-app-key-messages"
const ANTHROPIC_KEY = "sk-ant-configured-key-000"

let gw: TestGateway
let openai: FakeUpstream
let anthropic: FakeUpstream
beforeAll(async () => {
  openai = await startFakeUpstream()
  anthropic = await startFakeUpstream()
  // OpenAI stays the default provider: /v1/messages goes to Anthropic all the same.
  gw = await startGateway({
    UPSTREAM_BASE_URL: openai.url,
    ANTHROPIC_BASE_URL: anthropic.url,
    ANTHROPIC_API_KEY: ANTHROPIC_KEY,
    SERVICE_API_KEY: APP_KEY
  })
})
afterAll(async () => {
  await gw.close()
  await openai.close()
  await anthropic.close()
})
beforeEach(() => {
  openai.reset()
  anthropic.reset()
})

const client = (userId: string) =>
  new Anthropic({ baseURL: gw.baseUrl, apiKey: APP_KEY, maxRetries: 0, defaultHeaders: { "X-Service-Id": userId } })

/** A profile that has something to inject: its name. */
const knownUser = async (externalId: string) => {
  const admin = { authorization: `Bearer ${APP_KEY}` }
  expect([200, 201]).toContain(
    (await gw.request("POST", "/api/profiles", { json: { externalId }, headers: admin })).status
  )
  expect(
    (await gw.request("PUT", `/api/profiles/${externalId}/traits/name`, { json: { value: "Ada" }, headers: admin }))
      .status
  ).toBe(200)
}

const textStream = (pieces: ReadonlyArray<string>) => [
  anthropicEvent("message_start", {
    message: {
      id: "msg_02",
      type: "message",
      role: "assistant",
      model: "claude-test",
      content: [],
      usage: { input_tokens: 5, output_tokens: 0 }
    }
  }),
  anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
  anthropicEvent("ping", {}),
  ...pieces.map((text) => anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text } })),
  anthropicEvent("content_block_stop", { index: 0 }),
  anthropicEvent("message_delta", {
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { output_tokens: 4 }
  }),
  anthropicEvent("message_stop", {})
]

describe("POST /v1/messages", () => {
  it("leaves the caller's system blocks and messages as sent (cache_control kept) and puts the context in a user message after them", async () => {
    await knownUser("messages-plain")
    anthropic.enqueue({ kind: "json", status: 200, body: anthropicMessage([{ type: "text", text: "Hello Ada." }]) })
    const system = [{ type: "text" as const, text: "You are terse.", cache_control: { type: "ephemeral" as const } }]
    const answer = await client("messages-plain").messages.create({
      model: "claude-test",
      max_tokens: 100,
      system,
      messages: [{ role: "user", content: "Greet me" }]
    })
    expect(answer.content).toEqual([{ type: "text", text: "Hello Ada." }])

    expect(openai.requests).toHaveLength(0)
    const [sent] = anthropic.requests
    expect(sent).toMatchObject({ method: "POST", path: "/v1/messages" })
    expect(sent!.headers["x-api-key"]).toBe(ANTHROPIC_KEY)
    // The SDK's own API version, not the gateway's default.
    expect(sent!.headers["anthropic-version"]).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    expect(sent!.body).toEqual({
      model: "claude-test",
      max_tokens: 100,
      system,
      messages: [
        { role: "user", content: "Greet me" },
        { role: "user", content: [{ type: "text", text: expect.stringContaining("Ada") }] }
      ]
    })
    expect(JSON.stringify(sent!.body).split("Ada")).toHaveLength(2)

    expect(await recordedTurn(gw, "messages-plain")).toEqual([
      { role: "user", content: "Greet me" },
      { role: "assistant", content: "Hello Ada." }
    ])
  })

  it("relays a stream byte for byte and records the answer", async () => {
    await knownUser("messages-stream")
    const frames = textStream(["Hi ", "there"])
    anthropic.enqueue({ kind: "sse", frames })
    const res = await fetch(`${gw.baseUrl}/v1/messages`, {
      method: "POST",
      headers: {
        "x-api-key": APP_KEY,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
        "x-service-id": "messages-stream"
      },
      body: JSON.stringify({
        model: "claude-test",
        max_tokens: 50,
        stream: true,
        system: "Plain string.",
        messages: [{ role: "user", content: "Say hi" }]
      })
    })
    expect(res.status).toBe(200)
    expect(await res.text()).toBe(frames.join(""))
    const sent = anthropic.requests[0]!.body as { system: string; messages: Array<unknown> }
    expect(sent.system).toBe("Plain string.")
    expect(sent.messages).toEqual([
      { role: "user", content: "Say hi" },
      { role: "user", content: [{ type: "text", text: expect.stringContaining("Ada") }] }
    ])
    expect(await recordedTurn(gw, "messages-stream")).toEqual([
      { role: "user", content: "Say hi" },
      { role: "assistant", content: "Hi there" }
    ])
  })

  it("works with the SDK's streaming helper", async () => {
    anthropic.enqueue({ kind: "sse", frames: textStream(["Streamed ", "answer"]) })
    const final = await client("messages-sdk-stream")
      .messages.stream({
        model: "claude-test",
        max_tokens: 50,
        messages: [{ role: "user", content: "Stream please" }]
      })
      .finalMessage()
    expect(final.content).toMatchObject([{ type: "text", text: "Streamed answer" }])
  })

  it("records tool results as tool messages and a tool use as the assistant's call", async () => {
    anthropic.enqueue({ kind: "json", status: 200, body: anthropicMessage([{ type: "text", text: "It is 5°C." }]) })
    await client("messages-tools").messages.create({
      model: "claude-test",
      max_tokens: 100,
      tools: [{ name: "weather", input_schema: { type: "object", properties: { city: { type: "string" } } } }],
      messages: [
        { role: "user", content: "Weather in Oslo?" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "weather", input: { city: "Oslo" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "5°C" }] }
      ]
    })
    expect((anthropic.requests[0]!.body as { tools: unknown }).tools).toEqual([
      { name: "weather", input_schema: { type: "object", properties: { city: { type: "string" } } } }
    ])
    expect(await recordedTurn(gw, "messages-tools")).toEqual([
      { role: "tool", content: "5°C" },
      { role: "assistant", content: "It is 5°C." }
    ])
  })

  it("takes the user from metadata.user_id when no header names one, and refuses a request without", async () => {
    anthropic.enqueue({ kind: "json", status: 200, body: anthropicMessage([{ type: "text", text: "ok" }]) })
    const sdk = new Anthropic({ baseURL: gw.baseUrl, apiKey: APP_KEY, maxRetries: 0 })
    await sdk.messages.create({
      model: "claude-test",
      max_tokens: 10,
      metadata: { user_id: "from-metadata" },
      messages: [{ role: "user", content: "hi" }]
    })
    expect(await recordedTurn(gw, "from-metadata")).toHaveLength(2)

    const before = await gw.counts()
    const refused = await sdk.messages
      .create({ model: "claude-test", max_tokens: 10, messages: [{ role: "user", content: "hi" }] })
      .catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError)
    expect(refused).toMatchObject({ status: 400 })
    // The hint names what works on this API, and nothing that does not.
    const message = (refused as { error: { error: { message: string } } }).error.error.message
    expect(message).toBe("Identify the user with the X-Service-Id header or the body's `metadata.user_id`")
    expect(await gw.counts()).toEqual(before)
    expect(anthropic.requests).toHaveLength(1)
  })

  it("answers an SDK given the wrong base URL with a 404 that names the right one, sending nothing on", async () => {
    const misconfigured = new Anthropic({ baseURL: `${gw.baseUrl}/v1`, apiKey: APP_KEY, maxRetries: 0 })
    const refused = await misconfigured.messages
      .create({ model: "claude-test", max_tokens: 10, messages: [{ role: "user", content: "hi" }] })
      .catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(Anthropic.NotFoundError)
    const { host } = new URL(gw.baseUrl)
    expect((refused as { error: { error: { message: string } } }).error.error.message).toBe(
      `POST /v1/v1/messages has /v1 twice. The Anthropic SDK adds /v1 itself: set its baseURL to the gateway's root, http(s)://${host}, not http(s)://${host}/v1.`
    )
    const doubled = await gw.request("POST", "/v1/v1/chat/completions", {
      headers: { authorization: `Bearer ${APP_KEY}`, "user-agent": "OpenAI/JS 7.57.0" },
      json: { model: "m", messages: [{ role: "user", content: "hi" }] }
    })
    expect(expectError(doubled, 404, "wrong_base_url")).toContain(`Set the client's base URL to http(s)://${host}/v1`)
    expect(anthropic.requests).toHaveLength(0)
    expect(openai.requests).toHaveLength(0)
  })

  it("refuses a malformed body naming the field, and a provider other than Anthropic", async () => {
    const headers = { "x-api-key": APP_KEY, "x-service-id": "messages-bad" }
    expectError(
      await gw.request("POST", "/v1/messages", { json: { model: "claude-test", messages: [] }, headers }),
      400,
      "invalid_messages"
    )
    expectError(
      await gw.request("POST", "/v1/messages", {
        json: { model: "claude-test", messages: [{ role: "system", content: "x" }] },
        headers
      }),
      400,
      "invalid_messages"
    )
    expectError(
      await gw.request("POST", "/v1/messages", {
        json: { model: "claude-test", max_tokens: 5, messages: [{ role: "user", content: "x" }] },
        headers: { ...headers, "x-upstream-provider": "openai" }
      }),
      400,
      "invalid_upstream_provider"
    )
    expect(anthropic.requests).toHaveLength(0)
  })

  it("answers an Anthropic client's errors in Anthropic's format, with the gateway's code and param inside", async () => {
    const anthropicError = (type: string, code: string, param: string | null = null) => ({
      type: "error",
      error: { type, message: expect.stringMatching(/\S/), code, param }
    })
    const request = { model: "claude-test", max_tokens: 10, messages: [{ role: "user" as const, content: "hi" }] }

    const wrongKey = new Anthropic({
      baseURL: gw.baseUrl,
      apiKey: "sk-wrong",
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": "errors-user" }
    })
    const unauthorized = await wrongKey.messages.create(request).catch((error: unknown) => error)
    expect(unauthorized).toBeInstanceOf(Anthropic.AuthenticationError)
    expect(unauthorized).toMatchObject({
      status: 401,
      error: anthropicError("authentication_error", "invalid_api_key")
    })

    const bad = await client("errors-user")
      .messages.create({ ...request, messages: [] })
      .catch((error: unknown) => error)
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError)
    expect(bad).toMatchObject({ error: anthropicError("invalid_request_error", "invalid_messages", "messages") })

    // The provider's own error type is kept; an overloaded Anthropic stays 529.
    anthropic.enqueue({
      kind: "json",
      status: 529,
      body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }
    })
    const overloaded = await client("errors-user")
      .messages.create(request)
      .catch((error: unknown) => error)
    expect(overloaded).toBeInstanceOf(Anthropic.InternalServerError)
    expect(overloaded).toMatchObject({ status: 529, error: anthropicError("overloaded_error", "upstream_error") })

    // A gateway error of its own (the provider not answering) is Anthropic's `api_error`.
    const unreachable = await startGateway({
      ANTHROPIC_BASE_URL: "http://127.0.0.1:9",
      ANTHROPIC_API_KEY: ANTHROPIC_KEY
    })
    try {
      const down = await new Anthropic({
        baseURL: unreachable.baseUrl,
        apiKey: "unused",
        maxRetries: 0,
        defaultHeaders: { "X-Service-Id": "errors-user" }
      }).messages
        .create(request)
        .catch((error: unknown) => error)
      expect(down).toMatchObject({ status: 502, error: anthropicError("api_error", "upstream_unreachable") })
    } finally {
      await unreachable.close()
    }
    // An OpenAI client of the same gateway keeps OpenAI's format.
    expectError(
      await gw.request("POST", "/v1/chat/completions", {
        json: { model: "gpt-test", messages: [] },
        headers: { authorization: `Bearer ${APP_KEY}`, "x-service-id": "errors-user" }
      }),
      400,
      "invalid_messages"
    )
  })

  it("relays Anthropic's model list to an Anthropic client", async () => {
    const list = {
      data: [{ type: "model", id: "claude-test", display_name: "Claude Test", created_at: "2025-01-01T00:00:00Z" }],
      has_more: false,
      first_id: "claude-test",
      last_id: "claude-test"
    }
    anthropic.enqueue({ kind: "json", status: 200, body: list })
    const models = await client("models-user").models.list()
    expect(models.data.map((model) => model.id)).toEqual(["claude-test"])
    expect(anthropic.requests[0]).toMatchObject({ method: "GET", path: expect.stringMatching(/^\/v1\/models(\?|$)/) })
    expect(anthropic.requests[0]!.headers["x-api-key"]).toBe(ANTHROPIC_KEY)
  })
})
