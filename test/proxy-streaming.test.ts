import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { chunkFrames, eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-test-default-upstream",
    UPSTREAM_IDLE_TIMEOUT_MS: "400"
  })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})
beforeEach(() => up.reset())

const client = (userId: string) =>
  new OpenAI({
    baseURL: `${gw.baseUrl}/v1`,
    apiKey: "unused",
    maxRetries: 0,
    defaultHeaders: { "X-Service-Id": userId }
  })

const messagesOf = (externalId: string) =>
  gw.query<{ role: string; content: string; tool_calls: unknown }>(
    `SELECT m.role, m.content, m.tool_calls FROM messages m JOIN profiles p ON p.id = m.profile_id
     WHERE p.external_id = $1 ORDER BY m.created_at, m.id`,
    [externalId]
  )

/** Posts a streaming request with fetch and returns the response and its whole body as text. */
const streamRaw = async (userId: string, body: Record<string, unknown> = {}, signal?: AbortSignal) => {
  const response = await fetch(`${gw.baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-service-id": userId },
    body: JSON.stringify({ model: "gpt-test", stream: true, messages: [{ role: "user", content: "hi" }], ...body }),
    ...(signal === undefined ? {} : { signal })
  })
  return response
}

describe("streaming", () => {
  it("relays the upstream's events byte for byte, usage chunk and [DONE] included", async () => {
    const frames = chunkFrames(["Hel", "lo", " wörld 👋"], { usage: true })
    up.enqueue({ kind: "sse", frames, intervalMs: 10 })
    const response = await streamRaw("stream-bytes", { stream_options: { include_usage: true } })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    expect(response.headers.get("x-request-id")).toBe("req_fake_stream")
    expect(response.headers.get("x-service-context")).toContain("profileId")
    expect(await response.text()).toBe(frames.join(""))
  })

  it("yields the same chunks through the official SDK", async () => {
    const frames = chunkFrames(["a", "b", "c"], { usage: true })
    up.enqueue({ kind: "sse", frames, intervalMs: 5 })
    const stream = await client("stream-sdk").chat.completions.create({
      model: "gpt-test",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "hi" }]
    })
    const received: Array<unknown> = []
    for await (const chunk of stream) received.push(chunk)
    const expected = frames.filter((f) => !f.includes("[DONE]")).map((f) => JSON.parse(f.slice("data: ".length)))
    expect(received).toEqual(expected)
    expect(up.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } })
  })

  it("rebuilds and records the streamed answer, tool call deltas included", async () => {
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    up.enqueue({
      kind: "sse",
      frames: [
        chunk({ role: "assistant", content: "Checking" }),
        chunk({ content: " now." }),
        chunk({
          tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "weather", arguments: "" } }]
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }),
        chunk({}, "tool_calls"),
        "data: [DONE]\n\n"
      ]
    })
    const response = await streamRaw("stream-record", { messages: [{ role: "user", content: "Weather?" }] })
    await response.text()
    const rows = await eventually(async () => {
      const rows = await messagesOf("stream-record")
      return rows.length === 2 ? rows : undefined
    })
    expect(rows[0]).toMatchObject({ role: "user", content: "Weather?" })
    expect(rows[1]).toMatchObject({
      role: "assistant",
      content: "Checking now.",
      tool_calls: [{ id: "call_1", type: "function", function: { name: "weather", arguments: '{"city":"Oslo"}' } }]
    })
  })

  it("aborts the upstream request when the client disconnects, and records nothing", async () => {
    up.enqueue({ kind: "sse", frames: chunkFrames(Array.from({ length: 50 }, (_, i) => `w${i} `)), intervalMs: 40 })
    const controller = new AbortController()
    const response = await streamRaw("stream-abort", {}, controller.signal)
    const reader = response.body!.getReader()
    await reader.read()
    controller.abort()
    await eventually(async () => (up.requests[0]?.aborted ? true : undefined))
    // A turn is written only when [DONE] arrives, which the aborted upstream can no longer send.
    expect(await messagesOf("stream-abort")).toHaveLength(0)
  })

  it("aborts a non-streaming upstream request too when the client disconnects", async () => {
    up.enqueue({ kind: "hang" })
    const controller = new AbortController()
    const pending = fetch(`${gw.baseUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-service-id": "plain-abort" },
      body: JSON.stringify({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] }),
      signal: controller.signal
    }).catch(() => undefined)
    await eventually(async () => (up.requests.length === 1 ? true : undefined))
    controller.abort()
    await pending
    await eventually(async () => (up.requests[0]!.aborted ? true : undefined))
  })

  it("ends with an SSE error event and no [DONE] when the upstream breaks mid-stream", async () => {
    const frames = chunkFrames(["one", "two", "three"])
    up.enqueue({ kind: "sse", frames: frames.slice(0, 3), then: "destroy" })
    const text = await (await streamRaw("stream-broken")).text()
    expect(text.startsWith(frames.slice(0, 3).join(""))).toBe(true)
    expect(text).toMatch(
      /event: error\ndata: \{"error":\{"message":"[^"]+","type":"upstream_error","code":"upstream_stream_error","param":null\}\}\n\n$/
    )
    expect(text).not.toContain("[DONE]")

    up.enqueue({ kind: "sse", frames: frames.slice(0, 3), then: "destroy" })
    const stream = await client("stream-broken-sdk").chat.completions.create({
      model: "gpt-test",
      stream: true,
      messages: [{ role: "user", content: "hi" }]
    })
    const seen: Array<string> = []
    const error = await (async () => {
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? "")
    })().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.APIError)
    expect(seen).toEqual(["", "one", "two"])
    // Each turn is kept as far as its answer went, marked incomplete (written before the error event
    // went out), and nothing is learned from it: no extraction job.
    for (const user of ["stream-broken", "stream-broken-sdk"]) {
      expect(
        await gw.query(
          `SELECT m.role, m.content, m.incomplete FROM messages m JOIN profiles p ON p.id = m.profile_id
           WHERE p.external_id = $1 ORDER BY m.created_at, m.id`,
          [user]
        )
      ).toEqual([
        { role: "user", content: "hi", incomplete: true },
        { role: "assistant", content: "onetwo", incomplete: true }
      ])
      expect(
        await gw.query(
          "SELECT j.id FROM extraction_jobs j JOIN profiles p ON p.id = j.profile_id WHERE p.external_id = $1",
          [user]
        )
      ).toEqual([])
    }
    const listed = await gw.request<{ messages: Array<{ role: string; incomplete: boolean }> }>(
      "GET",
      "/api/profiles/stream-broken-sdk/messages"
    )
    // Newest first.
    expect(listed.body.messages.map((message) => [message.role, message.incomplete])).toEqual([
      ["assistant", true],
      ["user", true]
    ])
  })

  it("gives up on an upstream that goes silent for longer than the idle timeout", async () => {
    up.enqueue({ kind: "sse", frames: chunkFrames(["slow"]).slice(0, 2), then: "stall" })
    const text = await (await streamRaw("stream-idle")).text()
    expect(text).toContain('"code":"upstream_timeout"')
    await eventually(async () => (up.requests[0]?.aborted ? true : undefined))
  })

  it("has no whole-stream timeout: a long stream with short gaps completes", async () => {
    const pieces = Array.from({ length: 12 }, (_, i) => `p${i}`)
    up.enqueue({ kind: "sse", frames: chunkFrames(pieces), intervalMs: 100 })
    const text = await (await streamRaw("stream-long")).text()
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true)
  })
})
