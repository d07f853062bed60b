import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { uncachedInput } from "../../src/domain/TokenUsage.ts"
import { toOpenAiCompletion } from "../../src/providers/anthropic/fromAnthropic.ts"
import { makeMessagesReader, makeStreamTranslator } from "../../src/providers/anthropic/streamTranslator.ts"
import { messagesUsage } from "../../src/providers/anthropic/usage.ts"
import { makeResponsesReader } from "../../src/providers/openai/responses.ts"
import { makeChunkReader } from "../../src/providers/openai/stream.ts"
import { chatCompletionsUsage, responsesUsage } from "../../src/providers/openai/usage.ts"
import { providers } from "../../src/providers/providers.ts"
import { parseAnswer, readAnswerBody as readWith } from "../../src/providers/usage.ts"

/** The reader of the path called, as the relay picks it (`Provider.usage`). */
const readAnswerBody = (path: string, answer: unknown) =>
  readWith({ ...providers.openai.usage, ...providers.anthropic.usage }[path], answer)

const encoder = new TextEncoder()
const bytes = (text: string) => encoder.encode(text)
const sse = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

/** Usages no API's reader counts: a figure missing, negative, fractional, not a number; more cached than input. */
const badFigures = [
  { input: "missing", output: 5 },
  { input: -1, output: 5 },
  { input: 10, output: -5 },
  { input: 10.5, output: 5 },
  { input: "10", output: 5 },
  { input: 10, output: "5" },
  { input: 10, output: null },
  { input: Number.NaN, output: 5 }
]
const withFigures = (keys: { input: string; output: string }, figures: { input: unknown; output: unknown }) => ({
  ...(figures.input === "missing" ? {} : { [keys.input]: figures.input }),
  [keys.output]: figures.output
})

describe("a provider's usage as TokenUsage", () => {
  it("reads Chat Completions: the prompt includes the cached tokens", () => {
    expect(
      chatCompletionsUsage({
        prompt_tokens: 1200,
        completion_tokens: 40,
        total_tokens: 1240,
        prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 16 }
      })
    ).toEqual({ input: 1200, cachedInput: 1024, cacheWrite: 0, output: 40, reasoning: 16 })
    // Without details (older models, other providers), or with them empty: nothing cached.
    for (const details of [{}, { prompt_tokens_details: null }, { prompt_tokens_details: { cached_tokens: null } }])
      expect(chatCompletionsUsage({ prompt_tokens: 9, completion_tokens: 2, ...details })).toEqual({
        input: 9,
        cachedInput: 0,
        cacheWrite: 0,
        output: 2,
        reasoning: 0
      })
  })

  it("reads Responses: the input includes the cached tokens", () => {
    expect(
      responsesUsage({
        input_tokens: 2048,
        input_tokens_details: { cached_tokens: 1536 },
        output_tokens: 12,
        output_tokens_details: { reasoning_tokens: 4 },
        total_tokens: 2060
      })
    ).toEqual({ input: 2048, cachedInput: 1536, cacheWrite: 0, output: 12, reasoning: 4 })
    expect(responsesUsage({ input_tokens: 3, output_tokens: 1 })).toEqual({
      input: 3,
      cachedInput: 0,
      cacheWrite: 0,
      output: 1,
      reasoning: 0
    })
  })

  it("reads Anthropic Messages: cache reads and writes come on top of the uncached input", () => {
    const usage = messagesUsage({
      input_tokens: 50,
      cache_read_input_tokens: 900,
      cache_creation_input_tokens: 300,
      output_tokens: 25,
      service_tier: "standard"
    })
    expect(usage).toEqual({ input: 1250, cachedInput: 900, cacheWrite: 300, output: 25, reasoning: 0 })
    // A cache write is input the cache did not serve.
    expect(usage === undefined ? undefined : uncachedInput(usage)).toBe(350)
    expect(
      messagesUsage({
        input_tokens: 7,
        cache_read_input_tokens: null,
        cache_creation_input_tokens: null,
        output_tokens: 3
      })
    ).toEqual({ input: 7, cachedInput: 0, cacheWrite: 0, output: 3, reasoning: 0 })
  })

  it("reads nothing of a usage with a figure missing, negative, fractional or not a number", () => {
    for (const figures of badFigures) {
      expect(
        chatCompletionsUsage(withFigures({ input: "prompt_tokens", output: "completion_tokens" }, figures)),
        JSON.stringify(figures)
      ).toBeUndefined()
      expect(
        responsesUsage(withFigures({ input: "input_tokens", output: "output_tokens" }, figures)),
        JSON.stringify(figures)
      ).toBeUndefined()
      expect(
        messagesUsage(withFigures({ input: "input_tokens", output: "output_tokens" }, figures)),
        JSON.stringify(figures)
      ).toBeUndefined()
    }
    // A cache figure that is wrong spoils the whole usage, as does more cached than input.
    expect(
      chatCompletionsUsage({ prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: -2 } })
    ).toBeUndefined()
    expect(
      chatCompletionsUsage({ prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 11 } })
    ).toBeUndefined()
    expect(
      responsesUsage({ input_tokens: 10, output_tokens: 1, input_tokens_details: { cached_tokens: "3" } })
    ).toBeUndefined()
    expect(messagesUsage({ input_tokens: 1, output_tokens: 1, cache_read_input_tokens: "900" })).toBeUndefined()
    expect(messagesUsage({ input_tokens: 1, output_tokens: 1, cache_creation_input_tokens: 1.5 })).toBeUndefined()
    for (const notUsage of [undefined, null, "usage", 42, [], {}])
      for (const read of [chatCompletionsUsage, responsesUsage, messagesUsage]) expect(read(notUsage)).toBeUndefined()
  })

  it("reads a whole answer's model and usage by the path that answered it", () => {
    const body = (value: unknown) => parseAnswer(bytes(JSON.stringify(value)))
    expect(
      readAnswerBody(
        "/chat/completions",
        body({ model: "gpt-x", choices: [], usage: { prompt_tokens: 4, completion_tokens: 2 } })
      )
    ).toEqual({ model: "gpt-x", usage: { input: 4, cachedInput: 0, cacheWrite: 0, output: 2, reasoning: 0 } })
    expect(
      readAnswerBody("/responses", body({ model: "gpt-x", usage: { input_tokens: 4, output_tokens: 2 } })).usage
    ).toEqual({ input: 4, cachedInput: 0, cacheWrite: 0, output: 2, reasoning: 0 })
    expect(
      readAnswerBody(
        "/messages",
        body({ model: "claude", usage: { input_tokens: 4, cache_read_input_tokens: 6, output_tokens: 2 } })
      ).usage
    ).toEqual({ input: 10, cachedInput: 6, cacheWrite: 0, output: 2, reasoning: 0 })
    // Each API by its own shape: the same figures read by another API's rule would mean another thing.
    expect(readAnswerBody("/responses", body({ usage: { prompt_tokens: 4, completion_tokens: 2 } })).usage).toBe(
      undefined
    )
    expect(readAnswerBody("/models", body({ usage: { prompt_tokens: 4, completion_tokens: 2 } })).usage).toBe(undefined)
    expect(readAnswerBody("/chat/completions", body({ model: 7, usage: null }))).toEqual({
      model: undefined,
      usage: undefined
    })
    expect(readAnswerBody("/chat/completions", parseAnswer(bytes("not json")))).toEqual({
      model: undefined,
      usage: undefined
    })
  })
})

describe("a stream's usage, on the piece that carried it", () => {
  const chunk = (value: Record<string, unknown>) =>
    `data: ${JSON.stringify({ object: "chat.completion.chunk", ...value })}\n\n`

  it("Chat Completions: the last chunk's, when the client asked for it; its other chunks carry `usage: null`", () => {
    const read = makeChunkReader()
    const text = read(bytes(chunk({ choices: [{ index: 0, delta: { content: "Hi" } }], usage: null })))
    expect(text.usage).toBeUndefined()
    expect(text.events).toHaveLength(1)
    const last = read(
      bytes(
        `${chunk({
          choices: [],
          usage: { prompt_tokens: 30, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 20 } }
        })}data: [DONE]\n\n`
      )
    )
    expect(last.usage).toEqual({ input: 30, cachedInput: 20, cacheWrite: 0, output: 3, reasoning: 0 })
    expect(last.events.map((event) => event._tag)).toEqual(["Chunk", "Done"])
  })

  it("Chat Completions: an odd usage costs the chunk nothing, and counts nothing", () => {
    const read = makeChunkReader()
    const piece = read(
      bytes(
        chunk({
          choices: [{ index: 0, delta: { content: "end" }, finish_reason: "stop" }],
          usage: { prompt_tokens: "many", completion_tokens: -1 }
        })
      )
    )
    expect(piece.usage).toBeUndefined()
    const [event] = piece.events
    expect(event?._tag === "Chunk" ? event.chunk.choices[0]?.finish_reason : undefined).toBe("stop")
  })

  it("Responses: the usage of the response its last event carries", () => {
    const read = makeResponsesReader()
    const response = {
      id: "resp_1",
      object: "response",
      status: "completed",
      model: "gpt-x",
      output: [{ type: "message", role: "assistant", content: [{ type: "output_text", text: "Hi" }] }],
      usage: { input_tokens: 100, input_tokens_details: { cached_tokens: 64 }, output_tokens: 5 }
    }
    expect(read(bytes(sse("response.created", { response: { ...response, status: "in_progress" } }))).usage).toBe(
      undefined
    )
    const last = read(bytes(sse("response.completed", { response })))
    expect(last.usage).toEqual({ input: 100, cachedInput: 64, cacheWrite: 0, output: 5, reasoning: 0 })
    // An odd usage: the answer is still read for the record.
    const odd = makeResponsesReader()(
      bytes(sse("response.completed", { response: { ...response, usage: { input_tokens: -100, output_tokens: 5 } } }))
    )
    expect(odd.usage).toBeUndefined()
    expect(odd.events.map((event) => event._tag)).toEqual(["Chunk", "Done"])
  })

  const anthropicStream = (start: unknown, delta: unknown) => [
    sse("message_start", { message: { id: "msg_1", model: "claude", usage: start } }),
    sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
    sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hi" } }),
    sse("message_delta", { delta: { stop_reason: "end_turn" }, usage: delta }),
    sse("message_stop", {})
  ]

  it("Anthropic: message_start's input figures with message_delta's output, on the message_delta's piece", () => {
    const read = makeMessagesReader()
    const pieces = anthropicStream(
      { input_tokens: 12, cache_read_input_tokens: 2000, cache_creation_input_tokens: 500, output_tokens: 1 },
      { output_tokens: 30 }
    ).map((frame) => read(bytes(frame)))
    expect(pieces.map((piece) => piece.usage)).toEqual([
      undefined,
      undefined,
      undefined,
      { input: 2512, cachedInput: 2000, cacheWrite: 500, output: 30, reasoning: 0 },
      undefined
    ])
  })

  it("Anthropic translated: the client's usage chunk as before; an odd usage reads as none and translates as zeros", () => {
    const translate = (start: unknown, delta: unknown) => {
      const translator = makeStreamTranslator({ includeUsage: true, created: 1 })
      const events = Result.getOrThrow(translator.feed(bytes(anthropicStream(start, delta).join(""))))
      const usageChunk = events.at(-2)
      return {
        usage: translator.answer().usage,
        fed: translator.usageFed(),
        client: usageChunk?._tag === "Chunk" ? usageChunk.chunk.usage : undefined,
        events: events.length
      }
    }
    expect(
      translate({ input_tokens: 8, cache_read_input_tokens: 4, cache_creation_input_tokens: 2 }, { output_tokens: 5 })
    ).toEqual({
      usage: { input: 14, cachedInput: 4, cacheWrite: 2, output: 5, reasoning: 0 },
      fed: { input: 14, cachedInput: 4, cacheWrite: 2, output: 5, reasoning: 0 },
      client: {
        prompt_tokens: 14,
        completion_tokens: 5,
        total_tokens: 19,
        prompt_tokens_details: { cached_tokens: 4 }
      },
      events: 5
    })
    // Strings where counts belong: the stream is translated all the same (its text, its end).
    expect(translate({ input_tokens: "8" }, { output_tokens: 5 })).toEqual({
      usage: undefined,
      fed: undefined,
      client: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, prompt_tokens_details: { cached_tokens: 0 } },
      events: 5
    })
    expect(translate("usage", { output_tokens: -5 }).usage).toBeUndefined()
  })

  it("Anthropic whole answer: its usage, read once, translated for an OpenAI client", () => {
    const message = {
      id: "msg_1",
      model: "claude",
      content: [{ type: "text", text: "Hi" }],
      usage: { input_tokens: 8, cache_read_input_tokens: 4, cache_creation_input_tokens: 2, output_tokens: 5 }
    }
    expect(toOpenAiCompletion(message, 1).usage).toEqual({
      prompt_tokens: 14,
      completion_tokens: 5,
      total_tokens: 19,
      prompt_tokens_details: { cached_tokens: 4 }
    })
    expect(toOpenAiCompletion({ ...message, usage: { input_tokens: "x", output_tokens: 5 } }, 1).usage).toEqual({
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
      prompt_tokens_details: { cached_tokens: 0 }
    })
  })
})
