import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { eventually, type FakeUpstream, type RecordedRequest, startFakeUpstream } from "./support/fakeUpstream.ts"
import { recordedTurn, startGateway, type TestGateway } from "./support/gateway.ts"

/**
 * A streamed Chat Completion carries its usage only when asked (`stream_options.include_usage`): the
 * gateway asks, to count every answer's tokens, and a client that did not ask gets the stream it
 * would have got without the option.
 */

const SERVICE_KEY = "sk-service-stream-usage"

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-test-default-upstream",
    SERVICE_API_KEY: SERVICE_KEY
  })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})
beforeEach(() => {
  up.reset()
  up.handler = answerAsOpenAi
})

const client = (userId: string) =>
  new OpenAI({
    baseURL: `${gw.baseUrl}/v1`,
    apiKey: SERVICE_KEY,
    maxRetries: 0,
    defaultHeaders: { "X-Service-Id": userId }
  })

// ── The provider: OpenAI's stream, with or without the usage it was asked for ──────────────────────

const PROVIDER_USAGE = {
  prompt_tokens: 321,
  completion_tokens: 9,
  total_tokens: 330,
  prompt_tokens_details: { cached_tokens: 256, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0 }
}
const ANSWER = ["Stre", "amed ", "wörld ", "answer"]

/**
 * The frames OpenAI sends: asked for the usage, every chunk has `"usage":null` (among its fields, not
 * last) and a chunk with no choices and the usage comes before `[DONE]`.
 */
const openAiFrames = (askedUsage: boolean) => {
  const chunk = (choices: ReadonlyArray<unknown>, usage: unknown = null) =>
    `data: ${JSON.stringify({
      id: "chatcmpl-usage",
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: "gpt-test",
      system_fingerprint: "fp_usage",
      choices,
      ...(askedUsage ? { usage } : {}),
      obfuscation: "abc"
    })}\n\n`
  const delta = (value: Record<string, unknown>, finish: string | null = null) => [
    { index: 0, delta: value, logprobs: null, finish_reason: finish }
  ]
  return [
    chunk(delta({ role: "assistant", content: "", refusal: null })),
    ...ANSWER.map((content) => chunk(delta({ content }))),
    chunk(delta({}, "stop")),
    ...(askedUsage ? [chunk([], PROVIDER_USAGE)] : []),
    "data: [DONE]\n\n"
  ]
}

/** Answers a chat request as OpenAI does, its stream written in pieces that cut events anywhere. */
const answerAsOpenAi = (request: RecordedRequest) => {
  if (!request.path.endsWith("/chat/completions") || request.body?.["stream"] !== true) return undefined
  const options = request.body["stream_options"] as { readonly include_usage?: boolean } | undefined
  const text = openAiFrames(options?.include_usage === true).join("")
  return { kind: "sse", frames: text.match(/[\s\S]{1,13}/g) ?? [] } as const
}

const chatRequests = () => up.requests.filter((request) => request.path.endsWith("/chat/completions"))

// ── The gateway's token counters ──────────────────────────────────────────────────────────────────

/** A series as `name{labels}`, its labels in name order (the exposition's order is its own). */
const seriesName = (name: string, labels: ReadonlyArray<string>) => `${name}{${[...labels].sort().join(",")}}`

const CHAT = ['provider="openai"', 'api="chat.completions"']
const SERIES = {
  cached: seriesName("gateway_upstream_input_tokens_total", [...CHAT, 'cached="true"']),
  uncached: seriesName("gateway_upstream_input_tokens_total", [...CHAT, 'cached="false"']),
  output: seriesName("gateway_upstream_output_tokens_total", CHAT)
} as const
type Tokens = Record<keyof typeof SERIES, number>

const tokens = async (): Promise<Tokens> => {
  const response = await gw.request<string>("GET", "/metrics", {
    headers: { authorization: `Bearer ${SERVICE_KEY}` }
  })
  expect(response.status).toBe(200)
  const samples = new Map<string, number>()
  for (const line of response.text.split("\n")) {
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$/.exec(line)
    if (sample !== null) samples.set(seriesName(sample[1]!, sample[2]!.split(",")), Number(sample[3]))
  }
  const value = (series: string) => samples.get(series) ?? Number.NaN
  return { cached: value(SERIES.cached), uncached: value(SERIES.uncached), output: value(SERIES.output) }
}

const PROVIDER_TOKENS: Tokens = { cached: 256, uncached: 65, output: 9 }

/** What `act` adds to the counters, once they have grown by the provider's figures (a stream is counted as it ends). */
const countedBy = async (act: () => Promise<void>): Promise<Tokens> => {
  const before = await tokens()
  await act()
  const after = await eventually(async () => {
    const now = await tokens()
    return now.output - before.output >= PROVIDER_TOKENS.output ? now : undefined
  })
  return {
    cached: after.cached - before.cached,
    uncached: after.uncached - before.uncached,
    output: after.output - before.output
  }
}

const drain = async <A>(stream: AsyncIterable<A>) => {
  const chunks: Array<A> = []
  for await (const chunk of stream) chunks.push(chunk)
  return chunks
}

const textOf = (chunks: ReadonlyArray<OpenAI.ChatCompletionChunk>) =>
  chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("")

describe("a streamed Chat Completion's usage", () => {
  it("is asked for and counted, and hidden from a client that did not ask", async () => {
    let chunks: Array<OpenAI.ChatCompletionChunk> = []
    const counted = await countedBy(async () => {
      chunks = await drain(
        await client("usage-unasked").chat.completions.create({
          model: "gpt-test",
          stream: true,
          messages: [{ role: "user", content: "hello" }]
        })
      )
    })
    expect(chatRequests()[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } })
    expect(counted).toEqual(PROVIDER_TOKENS)
    expect(chunks.some((chunk) => "usage" in chunk)).toBe(false)
    expect(chunks.some((chunk) => chunk.choices.length === 0)).toBe(false)
    expect(chunks).toHaveLength(ANSWER.length + 2)
    expect(textOf(chunks)).toBe("Streamed wörld answer")
    // The turn is recorded as ever.
    const rows = await recordedTurn(gw, "usage-unasked")
    expect(rows.at(-1)).toMatchObject({ role: "assistant", content: "Streamed wörld answer" })
  })

  it("reaches a client that did not ask as the very bytes the provider sends without the option", async () => {
    let text = ""
    await countedBy(async () => {
      const response = await fetch(`${gw.baseUrl}/v1/chat/completions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${SERVICE_KEY}`,
          "x-service-id": "usage-bytes"
        },
        body: JSON.stringify({ model: "gpt-test", stream: true, messages: [{ role: "user", content: "hi" }] })
      })
      expect(response.status).toBe(200)
      text = await response.text()
    })
    expect(text).toBe(openAiFrames(false).join(""))
  })

  it("reaches a client that asked as the provider sent it: the usage chunk, and `usage: null` on the others", async () => {
    let chunks: Array<OpenAI.ChatCompletionChunk> = []
    const counted = await countedBy(async () => {
      chunks = await drain(
        await client("usage-asked").chat.completions.create({
          model: "gpt-test",
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: "user", content: "hello" }]
        })
      )
    })
    expect(chatRequests()[0]!.body?.["stream_options"]).toEqual({ include_usage: true })
    expect(counted).toEqual(PROVIDER_TOKENS)
    const sent = openAiFrames(true)
      .filter((frame) => !frame.includes("[DONE]"))
      .map((frame) => JSON.parse(frame.slice("data: ".length)))
    expect(chunks).toEqual(sent)
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: PROVIDER_USAGE })
    expect(chunks.slice(0, -1).every((chunk) => "usage" in chunk && chunk.usage === null)).toBe(true)
  })

  it("is asked for with the client's other stream_options, which reach the provider", async () => {
    let chunks: Array<OpenAI.ChatCompletionChunk> = []
    await countedBy(async () => {
      chunks = await drain(
        await client("usage-options").chat.completions.create({
          model: "gpt-test",
          stream: true,
          stream_options: { include_obfuscation: false },
          messages: [{ role: "user", content: "hello" }]
        })
      )
    })
    expect(chatRequests()[0]!.body?.["stream_options"]).toEqual({ include_obfuscation: false, include_usage: true })
    expect(chunks.some((chunk) => "usage" in chunk || chunk.choices.length === 0)).toBe(false)
    expect(textOf(chunks)).toBe("Streamed wörld answer")

    up.reset()
    up.handler = answerAsOpenAi
    await countedBy(async () => {
      await drain(
        await client("usage-options").chat.completions.create({
          model: "gpt-test",
          stream: true,
          stream_options: { include_usage: true, include_obfuscation: false },
          messages: [{ role: "user", content: "hello" }]
        })
      )
    })
    expect(chatRequests()[0]!.body?.["stream_options"]).toEqual({ include_usage: true, include_obfuscation: false })
  })

  it("is not asked for on a whole answer (it always carries its usage)", async () => {
    await client("usage-whole").chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "hello" }]
    })
    expect(chatRequests()[0]!.body).not.toHaveProperty("stream_options")
  })
})

describe("UPSTREAM_STREAM_USAGE=false (a server that refuses stream_options)", () => {
  let off: TestGateway
  beforeAll(async () => {
    off = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-test-default-upstream",
      SERVICE_API_KEY: SERVICE_KEY,
      UPSTREAM_STREAM_USAGE: "false"
    })
  })
  afterAll(async () => {
    await off.close()
  })

  it("sends the client's stream request as it came, and relays the stream as it came", async () => {
    const response = await fetch(`${off.baseUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${SERVICE_KEY}`, "x-service-id": "off" },
      body: JSON.stringify({ model: "gpt-test", stream: true, messages: [{ role: "user", content: "hi" }] })
    })
    expect(response.status).toBe(200)
    expect(await response.text()).toBe(openAiFrames(false).join(""))
    expect(chatRequests()[0]!.body).not.toHaveProperty("stream_options")
  })
})
