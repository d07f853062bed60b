import { createOpenAI } from "@ai-sdk/openai"
import { generateText, streamText } from "ai"
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { anthropicEvent, anthropicMessage } from "./support/anthropicWire.ts"
import { eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { recordedTurn, startGateway, type TestGateway } from "./support/gateway.ts"
import { injectedText } from "./support/injected.ts"
import { expectError } from "./support/wire.ts"

/** OpenAI's Responses API with memory: what the Vercel AI SDK's default model and `responses.create` call. */

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  // Anthropic's endpoint is the same scripted provider: its requests come to `/v1/messages`.
  gw = await startGateway({
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-upstream-responses",
    ANTHROPIC_BASE_URL: up.url,
    ANTHROPIC_API_KEY: "sk-ant-responses"
  })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})
beforeEach(() => up.reset())

const client = (userId?: string) =>
  new OpenAI({
    baseURL: `${gw.baseUrl}/v1`,
    apiKey: "unused",
    maxRetries: 0,
    defaultHeaders: userId === undefined ? {} : { "X-Service-Id": userId }
  })

const knownUser = async (externalId: string) => {
  expect([200, 201]).toContain((await gw.request("POST", "/api/profiles", { json: { externalId } })).status)
  expect((await gw.request("PUT", `/api/profiles/${externalId}/traits/name`, { json: { value: "Ada" } })).status).toBe(
    200
  )
}

const response = (output: Array<unknown>, status = "completed") => ({
  id: "resp_1",
  object: "response",
  created_at: 1_700_000_000,
  status,
  model: "gpt-test",
  output,
  usage: { input_tokens: 10, output_tokens: 3, total_tokens: 13 }
})
const textOutput = (text: string) => ({
  type: "message",
  id: "msg_1",
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", text, annotations: [] }]
})

const event = (type: string, data: Record<string, unknown>, sequence: number) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence, ...data })}\n\n`

/** A streamed text answer, with the events OpenAI sends around the deltas. */
const streamFrames = (pieces: ReadonlyArray<string>) => {
  const text = pieces.join("")
  const part = { type: "output_text", text: "", annotations: [] }
  const frames: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
    ["response.created", { response: response([], "in_progress") }],
    ["response.in_progress", { response: response([], "in_progress") }],
    [
      "response.output_item.added",
      { output_index: 0, item: { ...textOutput(""), status: "in_progress", content: [] } }
    ],
    ["response.content_part.added", { item_id: "msg_1", output_index: 0, content_index: 0, part }],
    ...pieces.map(
      (delta) =>
        [
          "response.output_text.delta",
          { item_id: "msg_1", output_index: 0, content_index: 0, delta, logprobs: [] }
        ] as const
    ),
    ["response.output_text.done", { item_id: "msg_1", output_index: 0, content_index: 0, text, logprobs: [] }],
    ["response.content_part.done", { item_id: "msg_1", output_index: 0, content_index: 0, part: { ...part, text } }],
    ["response.output_item.done", { output_index: 0, item: textOutput(text) }],
    ["response.completed", { response: response([textOutput(text)]) }]
  ]
  return frames.map(([type, data], sequence) => event(type, data, sequence))
}

describe("POST /v1/responses", () => {
  it("leaves the caller's instructions and input as sent, the context in a developer item after the input", async () => {
    await knownUser("responses-plain")
    up.enqueue({ kind: "json", status: 200, body: response([textOutput("Hello Ada.")]) })
    const answer = await client("responses-plain").responses.create({
      model: "gpt-test",
      instructions: "Be brief.",
      input: "Greet me",
      store: false,
      previous_response_id: "resp_0"
    })
    expect(answer.output_text).toBe("Hello Ada.")
    const [sent] = up.requests
    expect(sent).toMatchObject({ method: "POST", path: "/v1/responses" })
    expect(sent!.body).toEqual({
      model: "gpt-test",
      instructions: "Be brief.",
      // A string input is one user message: the same prompt, with the context after it.
      input: [
        { type: "message", role: "user", content: "Greet me" },
        { type: "message", role: "developer", content: expect.stringContaining("Ada") }
      ],
      store: false,
      previous_response_id: "resp_0"
    })
    expect(JSON.stringify(sent!.body).split("Ada")).toHaveLength(2)
    expect(await recordedTurn(gw, "responses-plain")).toEqual([
      { role: "user", content: "Greet me" },
      { role: "assistant", content: "Hello Ada." }
    ])
  })

  it("relays a stream byte for byte and records the answer from its last event", async () => {
    await knownUser("responses-stream")
    const frames = streamFrames(["Hi ", "there"])
    up.enqueue({ kind: "sse", frames })
    const res = await fetch(`${gw.baseUrl}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-service-id": "responses-stream" },
      body: JSON.stringify({
        model: "gpt-test",
        stream: true,
        input: [{ role: "user", content: [{ type: "input_text", text: "Say hi" }] }]
      })
    })
    expect(res.status).toBe(200)
    expect(await res.text()).toBe(frames.join(""))
    expect(injectedText(up.requests[0]!.body)).toContain("Ada")
    expect(up.requests[0]!.body!["instructions"]).toBeUndefined()
    expect(await recordedTurn(gw, "responses-stream")).toEqual([
      { role: "user", content: "Say hi" },
      { role: "assistant", content: "Hi there" }
    ])
  })

  it("streams to the official client's event iterator", async () => {
    up.enqueue({ kind: "sse", frames: streamFrames(["Streamed ", "answer"]) })
    const stream = await client("responses-sdk-stream").responses.create({
      model: "gpt-test",
      input: "Stream please",
      stream: true
    })
    const deltas: Array<string> = []
    for await (const streamed of stream) {
      if (streamed.type === "response.output_text.delta") deltas.push(streamed.delta)
    }
    expect(deltas.join("")).toBe("Streamed answer")
    expect(await recordedTurn(gw, "responses-sdk-stream")).toEqual([
      { role: "user", content: "Stream please" },
      { role: "assistant", content: "Streamed answer" }
    ])
  })

  it("records a function's output as a tool message and a function call as the assistant's", async () => {
    up.enqueue({
      kind: "json",
      status: 200,
      body: response([
        {
          type: "function_call",
          id: "fc_2",
          call_id: "call_2",
          name: "forecast",
          arguments: '{"days":2}',
          status: "completed"
        }
      ])
    })
    const answer = await client("responses-tools").responses.create({
      model: "gpt-test",
      tools: [{ type: "function", name: "forecast", parameters: { type: "object", properties: {} }, strict: false }],
      input: [
        { role: "user", content: "Weather?" },
        { type: "function_call", call_id: "call_1", name: "weather", arguments: "{}" },
        { type: "function_call_output", call_id: "call_1", output: "5°C" }
      ]
    })
    expect(answer.output[0]).toMatchObject({ type: "function_call", name: "forecast" })
    const rows = await eventually(async () => {
      const found = await gw.query<{ role: string; content: string; tool_calls: unknown }>(
        "SELECT m.role, m.content, m.tool_calls FROM messages m JOIN profiles p ON p.id = m.profile_id WHERE p.external_id = 'responses-tools' ORDER BY m.created_at, m.id"
      )
      return found.length === 2 ? found : undefined
    })
    expect(rows[0]).toMatchObject({ role: "tool", content: "5°C" })
    expect(rows[1]).toMatchObject({
      role: "assistant",
      tool_calls: [{ id: "call_2", function: { name: "forecast", arguments: '{"days":2}' } }]
    })
  })

  it("takes the user from safety_identifier, and refuses a request without one", async () => {
    up.enqueue({ kind: "json", status: 200, body: response([textOutput("ok")]) })
    await client().responses.create({ model: "gpt-test", input: "hi", safety_identifier: "responses-safety" })
    expect(await recordedTurn(gw, "responses-safety")).toHaveLength(2)
    expectError(
      await gw.request("POST", "/v1/responses", { json: { model: "gpt-test", input: "hi" } }),
      400,
      "missing_user_id"
    )
    expect(up.requests).toHaveLength(1)
  })

  it("serves the Vercel AI SDK's default OpenAI model, which calls the Responses API", async () => {
    await knownUser("responses-ai-sdk")
    const provider = createOpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: "unused",
      headers: { "X-Service-Id": "responses-ai-sdk" }
    })
    up.enqueue({ kind: "json", status: 200, body: response([textOutput("Hello from the SDK.")]) })
    const generated = await generateText({
      model: provider("gpt-test"),
      system: "Be brief.",
      prompt: "Greet me",
      maxRetries: 0
    })
    expect(generated.text).toBe("Hello from the SDK.")
    expect(up.requests[0]).toMatchObject({ method: "POST", path: "/v1/responses" })
    // The SDK sends its system prompt as a system message in `input`; the block goes to `instructions`.
    expect(JSON.stringify(up.requests[0]!.body).split("Ada")).toHaveLength(2)

    up.enqueue({ kind: "sse", frames: streamFrames(["Streamed ", "by the SDK"]) })
    const streamed = streamText({ model: provider("gpt-test"), prompt: "Stream please", maxRetries: 0 })
    expect(await streamed.text).toBe("Streamed by the SDK")
    expect((await recordedTurn(gw, "responses-ai-sdk")).slice(-2)).toEqual([
      { role: "user", content: "Stream please" },
      { role: "assistant", content: "Streamed by the SDK" }
    ])
  })

  it("passes the stored response's other routes through (GET /v1/responses/{id})", async () => {
    up.enqueue({ kind: "json", status: 200, body: response([textOutput("stored")]) })
    const stored = await client().responses.retrieve("resp_1")
    expect(stored.output_text).toBe("stored")
    expect(up.requests[0]).toMatchObject({ method: "GET", path: "/v1/responses/resp_1" })
  })
})

describe("POST /v1/responses with Anthropic as the provider", () => {
  const viaAnthropic = (userId: string) =>
    new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": userId, "X-Upstream-Provider": "anthropic" }
    })

  /** Anthropic's stream of a text answer, then (optionally) a tool call. */
  const anthropicStream = (
    pieces: ReadonlyArray<string>,
    call?: { readonly name: string; readonly json: ReadonlyArray<string> }
  ) => [
    anthropicEvent("message_start", {
      message: { ...anthropicMessage([], ""), stop_reason: null, usage: { input_tokens: 30, output_tokens: 1 } }
    }),
    anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
    ...pieces.map((text) => anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text } })),
    anthropicEvent("content_block_stop", { index: 0 }),
    ...(call === undefined
      ? []
      : [
          anthropicEvent("content_block_start", {
            index: 1,
            content_block: { type: "tool_use", id: "toolu_9", name: call.name, input: {} }
          }),
          ...call.json.map((partial_json) =>
            anthropicEvent("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json } })
          ),
          anthropicEvent("content_block_stop", { index: 1 })
        ]),
    anthropicEvent("message_delta", {
      delta: { stop_reason: call === undefined ? "end_turn" : "tool_use" },
      usage: { output_tokens: 12 }
    }),
    anthropicEvent("message_stop", {})
  ]

  it("translates the request and the answer: instructions as system, input as messages and the context after them, function tools", async () => {
    await knownUser("responses-claude")
    up.enqueue({
      kind: "json",
      status: 200,
      body: anthropicMessage([{ type: "text", text: "Hello Ada." }], "end_turn")
    })
    const answer = await viaAnthropic("responses-claude").responses.create({
      model: "claude-test",
      instructions: "Be brief.",
      max_output_tokens: 200,
      input: [
        { role: "user", content: [{ type: "input_text", text: "Weather?" }] },
        { type: "function_call", call_id: "call_1", name: "weather", arguments: '{"city":"Lyon"}' },
        { type: "function_call_output", call_id: "call_1", output: "5°C" },
        { role: "user", content: "Greet me" }
      ],
      tools: [
        {
          type: "function",
          name: "weather",
          description: "Weather now",
          parameters: { type: "object", properties: {} },
          strict: false
        }
      ],
      tool_choice: "auto"
    })
    expect(answer.output_text).toBe("Hello Ada.")
    expect(answer).toMatchObject({
      object: "response",
      status: "completed",
      model: "claude-test",
      usage: { input_tokens: 20, output_tokens: 9, total_tokens: 29 }
    })

    const [sent] = up.requests
    expect(sent).toMatchObject({ method: "POST", path: "/v1/messages" })
    expect(sent!.headers["x-api-key"]).toBe("sk-ant-responses")
    const body = sent!.body as {
      system: string
      messages: Array<unknown>
      tools: Array<unknown>
      max_tokens: number
      tool_choice: unknown
    }
    expect(body.system).toBe("Be brief.")
    expect(body.max_tokens).toBe(200)
    expect(body.tools).toEqual([
      { name: "weather", description: "Weather now", input_schema: { type: "object", properties: {} } }
    ])
    expect(body.tool_choice).toEqual({ type: "auto" })
    expect(body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Weather?" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "call_1", name: "weather", input: { city: "Lyon" } }] },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "call_1", content: "5°C" },
          { type: "text", text: "Greet me" }
        ]
      },
      { role: "user", content: [{ type: "text", text: expect.stringContaining("Ada") }] }
    ])
    expect(JSON.stringify(body).split("Ada")).toHaveLength(2)
    expect(await recordedTurn(gw, "responses-claude")).toEqual([
      { role: "tool", content: "5°C" },
      { role: "user", content: "Greet me" },
      { role: "assistant", content: "Hello Ada." }
    ])
  })

  it("streams Anthropic's answer as Responses events, text and function call, to the official client", async () => {
    up.enqueue({
      kind: "sse",
      frames: anthropicStream(["Let me ", "check."], { name: "weather", json: ['{"city":', '"Lyon"}'] })
    })
    const stream = await viaAnthropic("responses-claude-stream").responses.create({
      model: "claude-test",
      input: "Weather in Lyon?",
      tools: [{ type: "function", name: "weather", parameters: { type: "object", properties: {} }, strict: false }],
      stream: true
    })
    const events: Array<{ type: string; sequence_number: number }> = []
    for await (const event of stream) events.push(event)
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index))
    expect(events.map((event) => event.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed"
    ])
    const completed = events.at(-1) as unknown as { response: { output: Array<unknown>; usage: unknown } }
    expect(completed.response.output).toEqual([
      {
        type: "message",
        id: expect.any(String),
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "Let me check.", annotations: [] }]
      },
      {
        type: "function_call",
        id: "fc_toolu_9",
        call_id: "toolu_9",
        name: "weather",
        arguments: '{"city":"Lyon"}',
        status: "completed"
      }
    ])
    expect(completed.response.usage).toMatchObject({ input_tokens: 30, output_tokens: 12, total_tokens: 42 })
    expect((up.requests[0]!.body as { stream: boolean }).stream).toBe(true)
    const rows = await eventually(async () => {
      const found = await gw.query<{ role: string; content: string; tool_calls: unknown }>(
        "SELECT m.role, m.content, m.tool_calls FROM messages m JOIN profiles p ON p.id = m.profile_id WHERE p.external_id = 'responses-claude-stream' ORDER BY m.created_at, m.id"
      )
      return found.length === 2 ? found : undefined
    })
    expect(rows[1]).toMatchObject({
      role: "assistant",
      content: "Let me check.",
      tool_calls: [{ id: "toolu_9", function: { name: "weather", arguments: '{"city":"Lyon"}' } }]
    })
  })

  it("serves the Vercel AI SDK's default model with Anthropic behind it, plain and streamed", async () => {
    const provider = createOpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: "unused",
      headers: { "X-Service-Id": "responses-claude-sdk", "X-Upstream-Provider": "anthropic" }
    })
    up.enqueue({ kind: "json", status: 200, body: anthropicMessage([{ type: "text", text: "Plain from Claude." }]) })
    const generated = await generateText({ model: provider("claude-test"), prompt: "Greet me", maxRetries: 0 })
    expect(generated.text).toBe("Plain from Claude.")
    expect(generated.usage).toMatchObject({ inputTokens: 20, outputTokens: 9 })

    up.enqueue({ kind: "sse", frames: anthropicStream(["Streamed ", "from Claude"]) })
    const streamed = streamText({ model: provider("claude-test"), prompt: "Stream please", maxRetries: 0 })
    expect(await streamed.text).toBe("Streamed from Claude")
    expect((await recordedTurn(gw, "responses-claude-sdk")).slice(-2)).toEqual([
      { role: "user", content: "Stream please" },
      { role: "assistant", content: "Streamed from Claude" }
    ])
  })

  it("refuses what Anthropic cannot do with 400 unsupported_parameter, naming it, before anything is stored", async () => {
    const before = await gw.counts()
    const refused = [
      [{ background: true }, "background"],
      [{ tools: [{ type: "web_search_preview" }] }, "tools.0"],
      [{ text: { format: { type: "json_schema", name: "x", schema: {} } } }, "text.format"],
      [{ input: [{ type: "reasoning", id: "rs_1", summary: [] }] }, "input.0.type"]
    ] as const
    for (const [fields, param] of refused) {
      const res = await gw.request("POST", "/v1/responses", {
        json: { model: "claude-test", input: "hi", ...fields },
        headers: { "x-service-id": "responses-claude-refused", "x-upstream-provider": "anthropic" }
      })
      expectError(res, 400, "unsupported_parameter")
      expect((res.body as { error: { param: string } }).error.param).toBe(param)
    }
    expect(await gw.counts()).toEqual(before)
    expect(up.requests).toHaveLength(0)
  })
})
