import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { anthropicEvent, anthropicMessage } from "./support/anthropicWire.ts"
import { eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

const ANTHROPIC_KEY = "sk-ant-test-key-000000"

let gw: TestGateway
let anthropic: FakeUpstream
beforeAll(async () => {
  anthropic = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_PROVIDER: "anthropic",
    ANTHROPIC_BASE_URL: anthropic.url,
    UPSTREAM_API_KEY: ANTHROPIC_KEY
  })
})
afterAll(async () => {
  await gw.close()
  await anthropic.close()
})
beforeEach(() => anthropic.reset())

const client = (userId: string) =>
  new OpenAI({
    baseURL: `${gw.baseUrl}/v1`,
    apiKey: "unused",
    maxRetries: 0,
    defaultHeaders: { "X-Service-Id": userId }
  })

describe("requests to Anthropic", () => {
  it("translates system, images, tools, tool results and limits", async () => {
    anthropic.enqueue({ kind: "json", status: 200, body: anthropicMessage([{ type: "text", text: "ok" }], "end_turn") })
    await client("anthropic-request").chat.completions.create({
      model: "claude-test",
      max_completion_tokens: 300,
      temperature: 1.5,
      stop: "END",
      tools: [
        {
          type: "function",
          function: {
            name: "weather",
            description: "Get weather",
            parameters: { type: "object", properties: { city: { type: "string" } } }
          }
        }
      ],
      tool_choice: "required",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "developer", content: "Use metric units." },
        {
          role: "user",
          content: [
            { type: "text", text: "What is this and the weather?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
            { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } }
          ]
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "toolu_1", type: "function", function: { name: "weather", arguments: '{"city":"Oslo"}' } }]
        },
        { role: "tool", tool_call_id: "toolu_1", content: "5°C" }
      ]
    })
    const sent = anthropic.requests[0]!
    expect(sent.path).toBe("/v1/messages")
    expect(sent.headers["x-api-key"]).toBe(ANTHROPIC_KEY)
    expect(sent.headers["anthropic-version"]).toBe("2023-06-01")
    expect(sent.headers["authorization"]).toBeUndefined()
    expect(sent.body).toEqual({
      model: "claude-test",
      max_tokens: 300,
      temperature: 1,
      stop_sequences: ["END"],
      system: "Be brief.\n\nUse metric units.",
      tools: [
        {
          name: "weather",
          description: "Get weather",
          input_schema: { type: "object", properties: { city: { type: "string" } } }
        }
      ],
      tool_choice: { type: "any" },
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is this and the weather?" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
            { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } }
          ]
        },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "weather", input: { city: "Oslo" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "5°C" }] }
      ]
    })
  })

  it("puts the injected context in a user message of its own after the latest one, and defaults max_tokens", async () => {
    await gw.request("POST", "/api/profiles", { json: { externalId: "anthropic-inject" } })
    await gw.request("PUT", "/api/profiles/anthropic-inject/traits/name", { json: { value: "Noor" } })
    anthropic.enqueue({
      kind: "json",
      status: 200,
      body: anthropicMessage([{ type: "text", text: "hi Noor" }], "end_turn")
    })
    await client("anthropic-inject").chat.completions.create({
      model: "claude-test",
      messages: [{ role: "user", content: "hi" }]
    })
    const sent = anthropic.requests[0]!.body!
    expect(sent).toMatchObject({ max_tokens: 4096 })
    expect(sent["system"]).toBeUndefined()
    expect(sent["messages"]).toEqual([
      { role: "user", content: [{ type: "text", text: "hi" }] },
      { role: "user", content: [{ type: "text", text: expect.stringContaining("- Name: Noor") }] }
    ])
  })

  it("refuses what Anthropic cannot do, before calling it or storing anything", async () => {
    const before = await gw.counts()
    const res = await gw.request("POST", "/v1/chat/completions", {
      json: { model: "claude-test", n: 2, messages: [{ role: "user", content: "hi" }] },
      headers: { "x-service-id": "anthropic-n" }
    })
    expect(expectError(res, 400, "unsupported_parameter")).toContain("n must be 1")
    expect(anthropic.requests).toHaveLength(0)
    expect(await gw.counts()).toEqual(before)
  })
})

describe("answers from Anthropic", () => {
  it("come back as OpenAI completions: text, tool calls, stop reasons, usage", async () => {
    anthropic.enqueue({
      kind: "json",
      status: 200,
      body: anthropicMessage(
        [
          { type: "text", text: "Let me check." },
          { type: "tool_use", id: "toolu_9", name: "weather", input: { city: "Oslo" } }
        ],
        "tool_use",
        { input_tokens: 20, output_tokens: 9, cache_read_input_tokens: 5 }
      )
    })
    const completion = await client("anthropic-answer").chat.completions.create({
      model: "claude-test",
      messages: [{ role: "user", content: "weather?" }]
    })
    expect(completion).toMatchObject({
      id: "msg_01",
      object: "chat.completion",
      model: "claude-test",
      choices: [
        {
          index: 0,
          finish_reason: "tool_calls",
          message: {
            role: "assistant",
            content: "Let me check.",
            tool_calls: [
              { id: "toolu_9", type: "function", function: { name: "weather", arguments: '{"city":"Oslo"}' } }
            ]
          }
        }
      ],
      usage: { prompt_tokens: 25, completion_tokens: 9, total_tokens: 34, prompt_tokens_details: { cached_tokens: 5 } }
    })
    for (const [stop, finish] of [
      ["end_turn", "stop"],
      ["max_tokens", "length"],
      ["stop_sequence", "stop"]
    ] as const) {
      anthropic.enqueue({ kind: "json", status: 200, body: anthropicMessage([{ type: "text", text: "x" }], stop) })
      const reply = await client("anthropic-answer").chat.completions.create({
        model: "claude-test",
        messages: [{ role: "user", content: "x" }]
      })
      expect(reply.choices[0]!.finish_reason).toBe(finish)
    }
  })

  it("streams as OpenAI chunks, usage chunk included, and records the turn", async () => {
    anthropic.enqueue({
      kind: "sse",
      intervalMs: 5,
      frames: [
        anthropicEvent("message_start", {
          message: { ...anthropicMessage([], ""), stop_reason: null, usage: { input_tokens: 12, output_tokens: 1 } }
        }),
        anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
        anthropicEvent("ping", {}),
        anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hello" } }),
        anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: " there" } }),
        anthropicEvent("content_block_stop", { index: 0 }),
        anthropicEvent("content_block_start", {
          index: 1,
          content_block: { type: "tool_use", id: "toolu_2", name: "lookup", input: {} }
        }),
        anthropicEvent("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: '{"q":' } }),
        anthropicEvent("content_block_delta", {
          index: 1,
          delta: { type: "input_json_delta", partial_json: '"tea"}' }
        }),
        anthropicEvent("content_block_stop", { index: 1 }),
        anthropicEvent("message_delta", {
          delta: { stop_reason: "tool_use", stop_sequence: null },
          usage: { output_tokens: 15 }
        }),
        anthropicEvent("message_stop", {})
      ]
    })
    const stream = await client("anthropic-stream").chat.completions.create({
      model: "claude-test",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "Say hello" }]
    })
    const chunks: Array<OpenAI.Chat.Completions.ChatCompletionChunk> = []
    for await (const chunk of stream) chunks.push(chunk)
    expect(anthropic.requests[0]!.body).toMatchObject({ stream: true })
    expect(anthropic.requests[0]!.body).not.toHaveProperty("stream_options")
    expect(
      chunks.every((c) => c.id === "msg_01" && c.model === "claude-test" && c.object === "chat.completion.chunk")
    ).toBe(true)
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")
    expect(text).toBe("Hello there")
    const toolDeltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
    expect(toolDeltas[0]).toMatchObject({
      index: 0,
      id: "toolu_2",
      type: "function",
      function: { name: "lookup", arguments: "" }
    })
    expect(toolDeltas.map((d) => d.function?.arguments ?? "").join("")).toBe('{"q":"tea"}')
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason).toBe("tool_calls")
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 12, completion_tokens: 15, total_tokens: 27 }
    })

    const rows = await eventually(async () => {
      const rows = await gw.query<{ role: string; content: string; tool_calls: unknown }>(
        `SELECT m.role, m.content, m.tool_calls FROM messages m JOIN profiles p ON p.id = m.profile_id
         WHERE p.external_id = 'anthropic-stream' ORDER BY m.created_at`
      )
      return rows.length === 2 ? rows : undefined
    })
    expect(rows[1]).toMatchObject({
      role: "assistant",
      content: "Hello there",
      tool_calls: [{ id: "toolu_2", function: { name: "lookup", arguments: '{"q":"tea"}' } }]
    })
  })

  it("ends a stream with an error event when Anthropic reports one in-band", async () => {
    anthropic.enqueue({
      kind: "sse",
      frames: [
        anthropicEvent("message_start", { message: { ...anthropicMessage([], ""), stop_reason: null } }),
        anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hi" } }),
        anthropicEvent("error", { error: { type: "overloaded_error", message: "Overloaded" } })
      ]
    })
    const res = await fetch(`${gw.baseUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-service-id": "anthropic-overloaded" },
      body: JSON.stringify({ model: "claude-test", stream: true, messages: [{ role: "user", content: "hi" }] })
    })
    const text = await res.text()
    expect(text).toContain('"content":"Hi"')
    expect(text).toContain('event: error\ndata: {"error":{"message":"Overloaded"')
    expect(text).not.toContain("[DONE]")
  })

  it("keeps Anthropic's error status and message", async () => {
    anthropic.enqueue({
      kind: "json",
      status: 429,
      body: {
        type: "error",
        error: { type: "rate_limit_error", message: "Number of requests has exceeded your rate limit" }
      },
      headers: { "retry-after": "3" }
    })
    const error = await client("anthropic-429")
      .chat.completions.create({ model: "claude-test", messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    expect(error).toMatchObject({ status: 429, code: "upstream_error", type: "rate_limit_error" })
  })

  it("lists Anthropic's models in the OpenAI shape", async () => {
    anthropic.enqueue({
      kind: "json",
      status: 200,
      body: {
        data: [{ type: "model", id: "claude-test", display_name: "Claude Test", created_at: "2025-02-19T00:00:00Z" }],
        has_more: false
      }
    })
    const models = await client("anthropic-models").models.list()
    expect(models.data).toEqual([{ id: "claude-test", object: "model", created: 1739923200, owned_by: "anthropic" }])
    expect(anthropic.requests[0]!.headers["x-api-key"]).toBe(ANTHROPIC_KEY)
  })
})

describe("choosing the provider per request", () => {
  it("sends X-Upstream-Provider: anthropic to the configured Anthropic upstream", async () => {
    const openai = await startFakeUpstream()
    const both = await startGateway({
      UPSTREAM_BASE_URL: openai.url,
      ANTHROPIC_BASE_URL: anthropic.url,
      UPSTREAM_API_KEY: "sk-openai"
    })
    try {
      anthropic.enqueue({
        kind: "json",
        status: 200,
        body: anthropicMessage([{ type: "text", text: "from claude" }], "end_turn")
      })
      const chat = (headers: Record<string, string>) =>
        both.request<OpenAI.Chat.Completions.ChatCompletion>("POST", "/v1/chat/completions", {
          json: { model: "any", messages: [{ role: "user", content: "hi" }] },
          headers: { "x-service-id": "chooser", ...headers }
        })
      const viaAnthropic = await chat({ "x-upstream-provider": "Anthropic", "x-upstream-key": "sk-ant-caller" })
      expect(viaAnthropic.body.choices[0]!.message.content).toBe("from claude")
      expect(anthropic.requests[0]!.headers["x-api-key"]).toBe("sk-ant-caller")
      // UPSTREAM_API_KEY belongs to the default provider; Anthropic needs the caller's key here.
      expectError(await chat({ "x-upstream-provider": "anthropic" }), 401, "missing_upstream_key")
      expect((await chat({})).status).toBe(200)
      expect(openai.requests).toHaveLength(1)
      expectError(await chat({ "x-upstream-provider": "http://evil.example" }), 400, "invalid_upstream_provider")
    } finally {
      await both.close()
      await openai.close()
    }
  })
})
