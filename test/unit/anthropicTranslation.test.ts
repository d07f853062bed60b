import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { toOpenAiCompletion, toOpenAiModelList } from "../../src/providers/anthropic/fromAnthropic.ts"
import { makeStreamTranslator } from "../../src/providers/anthropic/streamTranslator.ts"
import { DEFAULT_MAX_TOKENS, toAnthropicRequest } from "../../src/providers/anthropic/toAnthropicRequest.ts"
import { makeStreamAssembler } from "../../src/providers/openai/StreamAssembler.ts"

const encoder = new TextEncoder()
const sse = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

describe("OpenAI request → Anthropic", () => {
  it("moves system messages out, merges consecutive turns and turns tool calls into blocks", () => {
    const result = toAnthropicRequest({
      model: "claude",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "developer", content: [{ type: "text", text: "Use metric units." }] },
        { role: "user", content: "Weather?" },
        { role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "t1", type: "function", function: { name: "weather", arguments: '{"city":"Oslo"}' } }]
        },
        { role: "tool", tool_call_id: "t1", content: "12°C" }
      ],
      temperature: 1.6,
      stop: "END",
      seed: 7
    })
    expect(Result.getOrThrow(result)).toEqual({
      model: "claude",
      max_tokens: DEFAULT_MAX_TOKENS,
      system: "Be brief.\n\nUse metric units.",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Weather?" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } }
          ]
        },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "weather", input: { city: "Oslo" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "12°C" }] }
      ],
      temperature: 1,
      stop_sequences: ["END"]
    })
  })

  it("refuses what Anthropic cannot do, naming the parameter", () => {
    const refused = (body: Record<string, unknown>) => {
      const result = toAnthropicRequest({ model: "claude", messages: [{ role: "user", content: "hi" }], ...body })
      return Result.isFailure(result) ? result.failure.param : "accepted"
    }
    expect(refused({ n: 2 })).toBe("n")
    expect(refused({ response_format: { type: "json_object" } })).toBe("response_format")
    expect(refused({ logprobs: true })).toBe("logprobs")
    expect(refused({ frobnicate: true })).toBe("frobnicate")
    expect(refused({ tools: [{ type: "code_interpreter" }] })).toBe("tools.0")
    expect(refused({ messages: [{ role: "user", content: [{ type: "input_audio" }] }] })).toBe("messages.0.content.0")
    expect(
      refused({ messages: [{ role: "assistant", tool_calls: [{ id: "x", function: { name: "f", arguments: "{" } }] }] })
    ).toBe("messages.0.tool_calls.0.function.arguments")
    expect(refused({ temperature: "hot" })).toBe("temperature")
    expect(refused({ n: 1, seed: 3 })).toBe("accepted")
  })

  it("names the end user in metadata.user_id: safety_identifier, else user", () => {
    const endUser = (body: Record<string, unknown>) => {
      const result = toAnthropicRequest({ model: "claude", messages: [{ role: "user", content: "hi" }], ...body })
      return Result.isSuccess(result) ? result.success.metadata : "refused"
    }
    expect(endUser({ safety_identifier: "s-1", user: "u-1" })).toEqual({ user_id: "s-1" })
    expect(endUser({ user: "u-1" })).toEqual({ user_id: "u-1" })
    expect(endUser({})).toBeUndefined()
  })
})

describe("Anthropic answer → OpenAI", () => {
  it("turns a message into a chat completion with usage in OpenAI's terms", () => {
    const completion = toOpenAiCompletion(
      {
        id: "msg_1",
        model: "claude",
        content: [
          { type: "thinking" },
          { type: "text", text: "Let me check." },
          { type: "tool_use", id: "t1", name: "weather", input: { city: "Oslo" } }
        ],
        stop_reason: "tool_use",
        usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 4 }
      },
      1700000000
    )
    expect(completion.choices[0]).toEqual({
      index: 0,
      message: {
        role: "assistant",
        content: "Let me check.",
        tool_calls: [{ id: "t1", type: "function", function: { name: "weather", arguments: '{"city":"Oslo"}' } }],
        refusal: null
      },
      finish_reason: "tool_calls",
      logprobs: null
    })
    expect(completion.usage).toEqual({
      prompt_tokens: 14,
      completion_tokens: 5,
      total_tokens: 19,
      prompt_tokens_details: { cached_tokens: 4 }
    })
  })

  it("lists models with their creation time in seconds", () => {
    expect(toOpenAiModelList({ data: [{ id: "claude-x", created_at: "2025-01-01T00:00:00Z" }] }).data).toEqual([
      { id: "claude-x", object: "model", created: 1735689600, owned_by: "anthropic" }
    ])
  })

  it("translates a stream into chunks the assembler reads without parsing bytes again", () => {
    const translator = makeStreamTranslator({ includeUsage: true, created: 1 })
    const stream = [
      sse("message_start", { message: { id: "msg_1", model: "claude", usage: { input_tokens: 7 } } }),
      sse("ping", {}),
      sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
      sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hi " } }),
      sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: "there" } }),
      sse("content_block_start", { index: 1, content_block: { type: "tool_use", id: "t1", name: "look" } }),
      sse("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: '{"q":1}' } }),
      sse("message_delta", { delta: { stop_reason: "tool_use" }, usage: { output_tokens: 3 } }),
      sse("message_stop", {})
    ].join("")
    const assembler = makeStreamAssembler()
    const events = []
    // Cut in the middle of an event: the translator waits for the rest.
    for (const part of [stream.slice(0, 100), stream.slice(100)]) {
      const translated = Result.getOrThrow(translator.feed(encoder.encode(part)))
      events.push(...translated)
      for (const event of translated) assembler.add(event)
    }
    expect(assembler.reply()).toEqual({
      answerId: "msg_1",
      content: "Hi there",
      toolCalls: [{ id: "t1", type: "function", function: { name: "look", arguments: '{"q":1}' } }],
      finishReason: "tool_calls"
    })
    expect(events.at(-1)).toEqual({ _tag: "Done" })
    const usage = events.at(-2)
    expect(usage?._tag === "Chunk" ? usage.chunk.usage : undefined).toEqual({
      prompt_tokens: 7,
      completion_tokens: 3,
      total_tokens: 10,
      prompt_tokens_details: { cached_tokens: 0 }
    })
  })

  it("reports an in-band error as the stream's failure", () => {
    const translator = makeStreamTranslator({ includeUsage: false, created: 1 })
    const result = translator.feed(
      encoder.encode(sse("error", { error: { type: "overloaded_error", message: "Overloaded" } }))
    )
    expect(Result.isFailure(result) ? result.failure.message : "no failure").toBe("Overloaded")
  })
})
