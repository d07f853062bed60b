import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { anthropicEvent, anthropicMessage } from "./support/anthropicWire.ts"
import { completion, eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

/**
 * The provider's token usage, prompt-cache figures included, read from every answer relayed on the
 * memory routes (each API, streamed and not) and counted in /metrics by provider and the API called.
 */

const APP_KEY = "sk-gateway-app-key-usage"
const auth = { authorization: `Bearer ${APP_KEY}` }

let gw: TestGateway
let openaiUp: FakeUpstream
let anthropicUp: FakeUpstream
beforeAll(async () => {
  openaiUp = await startFakeUpstream()
  anthropicUp = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: openaiUp.url,
    UPSTREAM_API_KEY: "sk-test-default-upstream",
    ANTHROPIC_BASE_URL: anthropicUp.url,
    ANTHROPIC_API_KEY: "sk-ant-test-usage",
    SERVICE_API_KEY: APP_KEY
  })
})
afterAll(async () => {
  await gw.close()
  await openaiUp.close()
  await anthropicUp.close()
})
beforeEach(() => {
  openaiUp.reset()
  anthropicUp.reset()
})

const openai = (headers: Record<string, string> = {}) =>
  new OpenAI({
    baseURL: `${gw.baseUrl}/v1`,
    apiKey: APP_KEY,
    maxRetries: 0,
    defaultHeaders: { "X-Service-Id": "usage-user", ...headers }
  })
/** An OpenAI client whose requests the gateway translates for Anthropic. */
const viaAnthropic = () => openai({ "X-Upstream-Provider": "anthropic" })
const anthropic = () =>
  new Anthropic({
    baseURL: gw.baseUrl,
    apiKey: APP_KEY,
    maxRetries: 0,
    defaultHeaders: { "X-Service-Id": "usage-user" }
  })

// ── What the scripted providers answer ────────────────────────────────────────────────────────────

const chatUsage = {
  prompt_tokens: 1200,
  completion_tokens: 40,
  total_tokens: 1240,
  prompt_tokens_details: { cached_tokens: 1024 }
}

const chatFrames = (usage: unknown) => {
  const chunk = (fields: Record<string, unknown>) =>
    `data: ${JSON.stringify({ id: "chatcmpl-usage", object: "chat.completion.chunk", created: 1_700_000_000, model: "gpt-test", ...fields })}\n\n`
  return [
    chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }], usage: null }),
    chunk({ choices: [{ index: 0, delta: { content: "Cached " }, finish_reason: null }], usage: null }),
    chunk({ choices: [{ index: 0, delta: { content: "answer" }, finish_reason: null }], usage: null }),
    chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: null }),
    ...(usage === undefined ? [] : [chunk({ choices: [], usage })]),
    "data: [DONE]\n\n"
  ]
}

const responsesUsage = {
  input_tokens: 2048,
  input_tokens_details: { cached_tokens: 1536 },
  output_tokens: 12,
  total_tokens: 2060
}

const responseObject = (usage: unknown, status = "completed") => ({
  id: "resp_usage",
  object: "response",
  created_at: 1_700_000_000,
  status,
  model: "gpt-test",
  output:
    status === "completed"
      ? [
          {
            type: "message",
            id: "msg_1",
            status: "completed",
            role: "assistant",
            content: [{ type: "output_text", text: "Cached answer", annotations: [] }]
          }
        ]
      : [],
  ...(usage === undefined ? {} : { usage })
})

const responsesEvent = (type: string, response: unknown) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, response })}\n\n`

const responsesFrames = (usage: unknown) => [
  responsesEvent("response.created", responseObject(undefined, "in_progress")),
  responsesEvent("response.completed", responseObject(usage))
]

const messagesUsage = {
  input_tokens: 50,
  cache_read_input_tokens: 900,
  cache_creation_input_tokens: 300,
  output_tokens: 25
}

/** Anthropic's stream: the input figures with `message_start`, the output with `message_delta`. */
const anthropicFrames = (start: unknown, delta: unknown) => [
  anthropicEvent("message_start", {
    message: { ...anthropicMessage([], ""), stop_reason: null, usage: start }
  }),
  anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
  anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Cached answer" } }),
  anthropicEvent("content_block_stop", { index: 0 }),
  anthropicEvent("message_delta", {
    delta: { stop_reason: "end_turn", stop_sequence: null },
    ...(delta === undefined ? {} : { usage: delta })
  }),
  anthropicEvent("message_stop", {})
]
const anthropicStart = {
  input_tokens: 50,
  cache_read_input_tokens: 900,
  cache_creation_input_tokens: 300,
  output_tokens: 1
}

const anthropicAnswer = (usage: unknown) => ({
  ...anthropicMessage([{ type: "text", text: "Cached answer" }]),
  usage
})

// ── The counts in /metrics ────────────────────────────────────────────────────────────────────────

/** Every sample of the exposition, its labels in name order: `name{a="…",b="…"}` → value. */
const scrape = async () => {
  const response = await gw.request<string>("GET", "/metrics", { headers: auth })
  expect(response.status).toBe(200)
  const samples = new Map<string, number>()
  for (const line of response.text.split("\n")) {
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (sample === null) continue
    const labels = [...(sample[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)]
      .map(([, name, value]) => `${name}="${value}"`)
      .sort()
    samples.set(`${sample[1]}{${labels.join(",")}}`, Number(sample[3]))
  }
  return samples
}

type Series = { readonly provider: "openai" | "anthropic"; readonly api: "chat.completions" | "responses" | "messages" }
const OPENAI_CHAT: Series = { provider: "openai", api: "chat.completions" }
const OPENAI_RESPONSES: Series = { provider: "openai", api: "responses" }
const ANTHROPIC_MESSAGES: Series = { provider: "anthropic", api: "messages" }

interface Tokens {
  readonly cached: number
  readonly uncached: number
  readonly cacheWrite: number
  readonly output: number
}

const name = (metric: string, labels: Record<string, string>) =>
  `${metric}{${Object.entries(labels)
    .map(([label, value]) => `${label}="${value}"`)
    .sort()
    .join(",")}}`

const tokensOf = (samples: Map<string, number>, { provider, api }: Series): Tokens => {
  const value = (metric: string, labels: Record<string, string> = {}) => {
    const found = samples.get(name(metric, { provider, api, ...labels }))
    if (found === undefined) throw new Error(`${name(metric, { provider, api, ...labels })} is not in /metrics`)
    return found
  }
  return {
    cached: value("gateway_upstream_input_tokens_total", { cached: "true" }),
    uncached: value("gateway_upstream_input_tokens_total", { cached: "false" }),
    cacheWrite: value("gateway_upstream_cache_write_tokens_total"),
    output: value("gateway_upstream_output_tokens_total")
  }
}

const total = (tokens: Tokens) => tokens.cached + tokens.uncached + tokens.cacheWrite + tokens.output

/**
 * What `act` adds to the series' counts, once they have grown by `expected`'s total (a stream is
 * counted as it ends, which may be just after its client has read that end).
 */
const countedBy = async (series: Series, expected: Tokens, act: () => Promise<void>): Promise<Tokens> => {
  const before = tokensOf(await scrape(), series)
  await act()
  const after = await eventually(async () => {
    const now = tokensOf(await scrape(), series)
    return total(now) - total(before) >= total(expected) ? now : undefined
  })
  return {
    cached: after.cached - before.cached,
    uncached: after.uncached - before.uncached,
    cacheWrite: after.cacheWrite - before.cacheWrite,
    output: after.output - before.output
  }
}

const CHAT_TOKENS: Tokens = { cached: 1024, uncached: 176, cacheWrite: 0, output: 40 }
const RESPONSES_TOKENS: Tokens = { cached: 1536, uncached: 512, cacheWrite: 0, output: 12 }
// Anthropic's cache writes are input its cache did not serve: 50 + 300 uncached.
const MESSAGES_TOKENS: Tokens = { cached: 900, uncached: 350, cacheWrite: 300, output: 25 }

const drain = async (stream: AsyncIterable<unknown>) => {
  const events: Array<unknown> = []
  for await (const event of stream) events.push(event)
  return events
}

describe("the token counters", () => {
  it("are there at 0 before the first answer, for every provider and the API it is called by", async () => {
    const samples = await scrape()
    for (const series of [OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES])
      expect(tokensOf(samples, series)).toEqual({ cached: 0, uncached: 0, cacheWrite: 0, output: 0 })
  })
})

describe("OpenAI Chat Completions", () => {
  it("counts a whole answer's usage, relayed to the client as the provider sent it", async () => {
    openaiUp.enqueue({
      kind: "json",
      status: 200,
      body: { ...completion({ content: "Cached answer" }), usage: chatUsage }
    })
    let answered: OpenAI.ChatCompletion | undefined
    const counted = await countedBy(OPENAI_CHAT, CHAT_TOKENS, async () => {
      answered = await openai().chat.completions.create({
        model: "gpt-test",
        messages: [{ role: "user", content: "hello" }]
      })
    })
    expect(counted).toEqual(CHAT_TOKENS)
    expect(answered?.usage).toEqual(chatUsage)
  })

  it("counts a stream's usage chunk (stream_options.include_usage), relayed as sent", async () => {
    openaiUp.enqueue({ kind: "sse", frames: chatFrames(chatUsage), intervalMs: 2 })
    let chunks: Array<unknown> = []
    const counted = await countedBy(OPENAI_CHAT, CHAT_TOKENS, async () => {
      chunks = await drain(
        await openai().chat.completions.create({
          model: "gpt-test",
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: "user", content: "hello" }]
        })
      )
    })
    expect(counted).toEqual(CHAT_TOKENS)
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: chatUsage })
  })
})

describe("OpenAI Responses", () => {
  it("counts a whole response's usage", async () => {
    openaiUp.enqueue({ kind: "json", status: 200, body: responseObject(responsesUsage) })
    let answered: OpenAI.Responses.Response | undefined
    const counted = await countedBy(OPENAI_RESPONSES, RESPONSES_TOKENS, async () => {
      answered = await openai().responses.create({ model: "gpt-test", input: "hello" })
    })
    expect(counted).toEqual(RESPONSES_TOKENS)
    expect(answered?.usage).toEqual(responsesUsage)
  })

  it("counts the usage of the response its stream's response.completed carries", async () => {
    openaiUp.enqueue({ kind: "sse", frames: responsesFrames(responsesUsage), intervalMs: 2 })
    let events: Array<unknown> = []
    const counted = await countedBy(OPENAI_RESPONSES, RESPONSES_TOKENS, async () => {
      events = await drain(await openai().responses.create({ model: "gpt-test", input: "hello", stream: true }))
    })
    expect(counted).toEqual(RESPONSES_TOKENS)
    expect(events.at(-1)).toMatchObject({ type: "response.completed", response: { usage: responsesUsage } })
  })
})

describe("Anthropic Messages", () => {
  it("counts a native whole answer: cache reads as cached input, cache writes as uncached input and apart", async () => {
    anthropicUp.enqueue({ kind: "json", status: 200, body: anthropicAnswer(messagesUsage) })
    let answered: Anthropic.Message | undefined
    const counted = await countedBy(ANTHROPIC_MESSAGES, MESSAGES_TOKENS, async () => {
      answered = await anthropic().messages.create({
        model: "claude-test",
        max_tokens: 100,
        messages: [{ role: "user", content: "hello" }]
      })
    })
    expect(counted).toEqual(MESSAGES_TOKENS)
    expect(answered?.usage).toEqual(messagesUsage)
  })

  it("counts a native stream: message_start's input figures with message_delta's output", async () => {
    anthropicUp.enqueue({ kind: "sse", frames: anthropicFrames(anthropicStart, { output_tokens: 25 }), intervalMs: 2 })
    let text = ""
    const counted = await countedBy(ANTHROPIC_MESSAGES, MESSAGES_TOKENS, async () => {
      const stream = anthropic().messages.stream({
        model: "claude-test",
        max_tokens: 100,
        messages: [{ role: "user", content: "hello" }]
      })
      text = await stream.finalText()
    })
    expect(counted).toEqual(MESSAGES_TOKENS)
    expect(text).toBe("Cached answer")
  })

  it("counts Anthropic's figures for a chat request translated to it, whole and streamed (usage asked for or not)", async () => {
    anthropicUp.enqueue({ kind: "json", status: 200, body: anthropicAnswer(messagesUsage) })
    let answered: OpenAI.ChatCompletion | undefined
    const whole = await countedBy(ANTHROPIC_MESSAGES, MESSAGES_TOKENS, async () => {
      answered = await viaAnthropic().chat.completions.create({
        model: "claude-test",
        messages: [{ role: "user", content: "hello" }]
      })
    })
    expect(whole).toEqual(MESSAGES_TOKENS)
    // What the client gets is the translation it always got: cached input within the prompt tokens.
    expect(answered?.usage).toEqual({
      prompt_tokens: 1250,
      completion_tokens: 25,
      total_tokens: 1275,
      prompt_tokens_details: { cached_tokens: 900 }
    })

    anthropicUp.enqueue({ kind: "sse", frames: anthropicFrames(anthropicStart, { output_tokens: 25 }) })
    let chunks: Array<unknown> = []
    const streamed = await countedBy(ANTHROPIC_MESSAGES, MESSAGES_TOKENS, async () => {
      chunks = await drain(
        await viaAnthropic().chat.completions.create({
          model: "claude-test",
          stream: true,
          messages: [{ role: "user", content: "hello" }]
        })
      )
    })
    expect(streamed).toEqual(MESSAGES_TOKENS)
    // The client did not ask for the usage: its chunks carry none.
    expect(JSON.stringify(chunks)).not.toContain("prompt_tokens")
  })

  it("counts Anthropic's figures for a Responses request translated to it, streamed", async () => {
    anthropicUp.enqueue({ kind: "sse", frames: anthropicFrames(anthropicStart, { output_tokens: 25 }) })
    const counted = await countedBy(ANTHROPIC_MESSAGES, MESSAGES_TOKENS, async () => {
      await drain(await viaAnthropic().responses.create({ model: "claude-test", input: "hello", stream: true }))
    })
    expect(counted).toEqual(MESSAGES_TOKENS)
  })
})

describe("answers whose usage cannot be counted", () => {
  /** Usages none of whose figures count: negative, strings, a figure missing. */
  const badChatUsages = [
    { prompt_tokens: -5, completion_tokens: 3 },
    { prompt_tokens: "1200", completion_tokens: "40" },
    { prompt_tokens: 1200 },
    { prompt_tokens: 1200, completion_tokens: 40, prompt_tokens_details: { cached_tokens: -1 } }
  ]
  const badResponsesUsages = [
    { input_tokens: -5, output_tokens: 3 },
    { input_tokens: "2048", output_tokens: 12 },
    { output_tokens: 12 },
    { input_tokens: 10, output_tokens: 12, input_tokens_details: { cached_tokens: 11 } }
  ]
  const badMessagesUsages = [
    { input_tokens: -5, output_tokens: 3 },
    { input_tokens: "50", output_tokens: 25 },
    { input_tokens: 50 },
    { input_tokens: 50, output_tokens: 25, cache_read_input_tokens: "900" }
  ]
  // A stream's input figures come with message_start, its output with message_delta.
  const badStreamUsages = [
    ...[
      { input_tokens: -5, output_tokens: 1 },
      { input_tokens: "50", output_tokens: 1 },
      { output_tokens: 1 },
      { input_tokens: 50, cache_read_input_tokens: "900", output_tokens: 1 },
      undefined
    ].map((start) => anthropicFrames(start, { output_tokens: 25 })),
    ...[
      { output_tokens: -25 },
      { output_tokens: "25" },
      {},
      { output_tokens: 25, cache_creation_input_tokens: -300 },
      undefined
    ].map((delta) => anthropicFrames(anthropicStart, delta))
  ]

  /**
   * Runs `bad` (every answer of which must succeed), then `good`, whose count is `expected`: once the
   * good one is counted, the bad ones, which ended before it started, have counted nothing.
   */
  const countsOnly = async (series: Series, expected: Tokens, bad: () => Promise<void>, good: () => Promise<void>) => {
    const counted = await countedBy(series, expected, async () => {
      await bad()
      await good()
    })
    expect(counted).toEqual(expected)
  }

  it("Chat Completions: a negative, a string or a missing figure counts nothing and the answer goes through", async () => {
    await countsOnly(
      OPENAI_CHAT,
      CHAT_TOKENS,
      async () => {
        for (const usage of badChatUsages) {
          openaiUp.enqueue({ kind: "json", status: 200, body: { ...completion({ content: "Odd usage" }), usage } })
          const answer = await openai().chat.completions.create({
            model: "gpt-test",
            messages: [{ role: "user", content: "hello" }]
          })
          expect(answer.choices[0]?.message.content).toBe("Odd usage")
          openaiUp.enqueue({ kind: "sse", frames: chatFrames(usage) })
          const chunks = await drain(
            await openai().chat.completions.create({
              model: "gpt-test",
              stream: true,
              stream_options: { include_usage: true },
              messages: [{ role: "user", content: "hello" }]
            })
          )
          expect(JSON.stringify(chunks)).toContain("Cached ")
        }
      },
      async () => {
        openaiUp.enqueue({ kind: "sse", frames: chatFrames(chatUsage) })
        await drain(
          await openai().chat.completions.create({
            model: "gpt-test",
            stream: true,
            stream_options: { include_usage: true },
            messages: [{ role: "user", content: "hello" }]
          })
        )
      }
    )
  })

  it("Chat Completions: a stream without usage (include_usage not asked) counts nothing and is relayed whole", async () => {
    await countsOnly(
      OPENAI_CHAT,
      CHAT_TOKENS,
      async () => {
        openaiUp.enqueue({ kind: "sse", frames: chatFrames(undefined) })
        const chunks = await drain(
          await openai().chat.completions.create({
            model: "gpt-test",
            stream: true,
            messages: [{ role: "user", content: "hello" }]
          })
        )
        expect(chunks).toHaveLength(4)
      },
      async () => {
        openaiUp.enqueue({ kind: "json", status: 200, body: { ...completion(), usage: chatUsage } })
        await openai().chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hello" }] })
      }
    )
  })

  it("Responses: odd usages and none count nothing, whole or streamed, and the answers go through", async () => {
    await countsOnly(
      OPENAI_RESPONSES,
      RESPONSES_TOKENS,
      async () => {
        for (const usage of [...badResponsesUsages, undefined]) {
          openaiUp.enqueue({ kind: "json", status: 200, body: responseObject(usage) })
          const answer = await openai().responses.create({ model: "gpt-test", input: "hello" })
          expect(answer.output_text).toBe("Cached answer")
          openaiUp.enqueue({ kind: "sse", frames: responsesFrames(usage) })
          const events = await drain(
            await openai().responses.create({ model: "gpt-test", input: "hello", stream: true })
          )
          expect(events.at(-1)).toMatchObject({ type: "response.completed" })
        }
      },
      async () => {
        openaiUp.enqueue({ kind: "json", status: 200, body: responseObject(responsesUsage) })
        await openai().responses.create({ model: "gpt-test", input: "hello" })
      }
    )
  })

  it("Anthropic: odd usages and none count nothing, native or translated, whole or streamed, and the answers go through", async () => {
    await countsOnly(
      ANTHROPIC_MESSAGES,
      MESSAGES_TOKENS,
      async () => {
        for (const usage of [...badMessagesUsages, undefined]) {
          anthropicUp.enqueue({ kind: "json", status: 200, body: anthropicAnswer(usage) })
          const native = await anthropic().messages.create({
            model: "claude-test",
            max_tokens: 100,
            messages: [{ role: "user", content: "hello" }]
          })
          expect(native.content).toEqual([{ type: "text", text: "Cached answer" }])
          anthropicUp.enqueue({ kind: "json", status: 200, body: anthropicAnswer(usage) })
          const translated = await viaAnthropic().chat.completions.create({
            model: "claude-test",
            messages: [{ role: "user", content: "hello" }]
          })
          expect(translated.choices[0]?.message.content).toBe("Cached answer")
        }
        for (const frames of badStreamUsages) {
          anthropicUp.enqueue({ kind: "sse", frames })
          // The raw events: the SDK's own accumulation would trip on a usage Anthropic never leaves out.
          const events = await drain(
            await anthropic().messages.create({
              model: "claude-test",
              max_tokens: 100,
              stream: true,
              messages: [{ role: "user", content: "hello" }]
            })
          )
          expect(events.at(-1)).toEqual({ type: "message_stop" })
          expect(JSON.stringify(events)).toContain("Cached answer")
          anthropicUp.enqueue({ kind: "sse", frames })
          const chunks = await drain(
            await viaAnthropic().chat.completions.create({
              model: "claude-test",
              stream: true,
              stream_options: { include_usage: true },
              messages: [{ role: "user", content: "hello" }]
            })
          )
          expect(JSON.stringify(chunks)).toContain("Cached answer")
        }
      },
      async () => {
        anthropicUp.enqueue({ kind: "json", status: 200, body: anthropicAnswer(messagesUsage) })
        await anthropic().messages.create({
          model: "claude-test",
          max_tokens: 100,
          messages: [{ role: "user", content: "hello" }]
        })
      }
    )
  })
})
