import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import type { ChatCompletion, ChatCompletionChunk } from "../../src/providers/openai/chat.ts"
import { chatCompletionAsResponse, makeResponsesEventWriter } from "../../src/providers/openai/responsesFromChat.ts"
import { responsesAsChatRequest } from "../../src/providers/openai/responsesViaChat.ts"
import { DONE, type StreamEvent } from "../../src/providers/openai/stream.ts"

describe("Responses request → Chat Completions request", () => {
  it("puts the instructions first, reads the input items as messages and carries function tools and limits", () => {
    const result = responsesAsChatRequest({
      model: "claude",
      instructions: "Be brief.",
      input: [
        { role: "developer", content: "Use metric units." },
        {
          role: "user",
          content: [
            { type: "input_text", text: "Weather?" },
            { type: "input_image", image_url: "https://x/y.png" }
          ]
        },
        { type: "function_call", call_id: "c1", name: "weather", arguments: "{}" },
        { type: "function_call", call_id: "c2", name: "time", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "12°C" },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "It is 12°C." }] }
      ],
      max_output_tokens: 100,
      tools: [{ type: "function", name: "weather", description: "Now", parameters: { type: "object" }, strict: true }],
      tool_choice: { type: "function", name: "weather" },
      safety_identifier: "u1",
      metadata: { ignored: "yes" },
      stream: true
    })
    expect(Result.getOrThrow(result)).toEqual({
      model: "claude",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "developer", content: "Use metric units." },
        {
          role: "user",
          content: [
            { type: "text", text: "Weather?" },
            { type: "image_url", image_url: { url: "https://x/y.png" } }
          ]
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "c1", type: "function", function: { name: "weather", arguments: "{}" } },
            { id: "c2", type: "function", function: { name: "time", arguments: "{}" } }
          ]
        },
        { role: "tool", tool_call_id: "c1", content: "12°C" },
        { role: "assistant", content: [{ type: "text", text: "It is 12°C." }] }
      ],
      max_completion_tokens: 100,
      stream: true,
      safety_identifier: "u1",
      tools: [{ type: "function", function: { name: "weather", description: "Now", parameters: { type: "object" } } }],
      tool_choice: { type: "function", function: { name: "weather" } }
    })
  })

  it("refuses what a chat request cannot carry, naming the parameter", () => {
    const refused = (body: Record<string, unknown>) => {
      const result = responsesAsChatRequest({ model: "claude", input: "hi", ...body })
      return Result.isFailure(result) ? result.failure.param : "accepted"
    }
    expect(refused({ previous_response_id: "resp_1" })).toBe("previous_response_id")
    expect(refused({ store: true })).toBe("store")
    expect(refused({ store: false })).toBe("accepted")
    expect(refused({ background: true })).toBe("background")
    expect(refused({ conversation: "conv_1" })).toBe("conversation")
    expect(refused({ tools: [{ type: "file_search", vector_store_ids: [] }] })).toBe("tools.0")
    expect(refused({ tool_choice: { type: "web_search_preview" } })).toBe("tool_choice")
    expect(refused({ text: { format: { type: "json_object" } } })).toBe("text.format")
    expect(refused({ input: [{ role: "user", content: [{ type: "input_file", file_id: "f" }] }] })).toBe(
      "input.0.content.0"
    )
    expect(refused({ input: [{ type: "reasoning", summary: [] }] })).toBe("input.0.type")
    expect(refused({ temperature: "hot" })).toBe("temperature")
  })
})

const completion = (
  text: string,
  calls: ReadonlyArray<{ readonly name: string; readonly args: string }>
): ChatCompletion => ({
  id: "chat_1",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "claude",
  choices: [
    {
      index: 0,
      message: {
        role: "assistant",
        content: text === "" && calls.length > 0 ? null : text,
        ...(calls.length > 0
          ? {
              tool_calls: calls.map((call, index) => ({
                id: `t${index}`,
                type: "function",
                function: { name: call.name, arguments: call.args }
              }))
            }
          : {})
      },
      finish_reason: calls.length > 0 ? "tool_calls" : "stop"
    }
  ],
  usage: { prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 }
})

/** The same answer as a chat stream: the text in the given pieces, then each call's arguments in two. */
const chunksOf = (
  pieces: ReadonlyArray<string>,
  calls: ReadonlyArray<{ readonly name: string; readonly args: string }>
) => {
  const chunk = (
    delta: Record<string, unknown>,
    finish: string | null = null,
    usage?: ChatCompletionChunk["usage"]
  ): StreamEvent => ({
    _tag: "Chunk",
    chunk: {
      id: "chat_1",
      model: "claude",
      choices: usage === undefined ? [{ index: 0, delta, finish_reason: finish }] : [],
      ...(usage === undefined ? {} : { usage })
    }
  })
  return [
    chunk({ role: "assistant", content: "" }),
    ...pieces.map((content) => chunk({ content })),
    ...calls.flatMap((call, index) => [
      chunk({
        tool_calls: [
          { index, id: `t${index}`, type: "function", function: { name: call.name, arguments: call.args.slice(0, 2) } }
        ]
      }),
      chunk({ tool_calls: [{ index, function: { arguments: call.args.slice(2) } }] })
    ]),
    chunk({}, calls.length > 0 ? "tool_calls" : "stop"),
    chunk({}, null, { prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 }),
    DONE
  ]
}

const decoder = new TextDecoder()
const eventsOf = (bytes: string) =>
  bytes
    .split("\n\n")
    .filter((frame) => frame !== "")
    .map((frame) => {
      const [eventLine, dataLine] = frame.split("\n")
      const data = JSON.parse(dataLine!.slice("data: ".length)) as {
        type: string
        sequence_number: number
        [key: string]: unknown
      }
      expect(eventLine).toBe(`event: ${data.type}`)
      return data
    })

describe("chat stream → Responses events", () => {
  it("ends with the response a non-streamed answer would be, whatever the pieces and however they are fed", () => {
    const call = fc.record({ name: fc.constantFrom("weather", "time"), args: fc.json() })
    fc.assert(
      fc.property(
        fc.array(fc.string({ minLength: 1 }), { maxLength: 5 }),
        fc.array(call, { maxLength: 2 }),
        fc.nat(20),
        (pieces, calls, cut) => {
          const chat = chunksOf(pieces, calls)
          const write = makeResponsesEventWriter(1_700_000_000)
          const at = Math.min(cut, chat.length)
          const bytes = [write(chat.slice(0, at)), write(chat.slice(at))]
            .map((piece) => decoder.decode(piece.bytes))
            .join("")
          const events = eventsOf(bytes)
          expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index))
          expect(events[0]!.type).toBe("response.created")
          const text = events
            .filter((event) => event.type === "response.output_text.delta")
            .map((event) => event["delta"])
            .join("")
          expect(text).toBe(pieces.join(""))
          const last = events.at(-1)!
          expect(last.type).toBe("response.completed")
          const expected = chatCompletionAsResponse(completion(pieces.join(""), calls))
          const { output, usage } = last["response"] as typeof expected
          // Message ids differ (a stream numbers its items); everything else is the same answer.
          const withoutIds = (items: ReadonlyArray<unknown>) =>
            items.map((item) => ({
              ...(item as Record<string, unknown>),
              id: (item as { type: string }).type === "message" ? "" : (item as { id: string }).id
            }))
          expect(withoutIds(output)).toEqual(withoutIds(expected.output))
          expect(usage).toEqual(expected.usage)
        }
      )
    )
  })

  it("marks an answer cut by its token limit incomplete", () => {
    const write = makeResponsesEventWriter(1)
    const piece = write([
      {
        _tag: "Chunk",
        chunk: {
          id: "c",
          model: "m",
          choices: [{ index: 0, delta: { content: "Once upon" }, finish_reason: "length" }]
        }
      },
      DONE
    ])
    const last = eventsOf(decoder.decode(piece.bytes)).at(-1)!
    expect(last).toMatchObject({
      type: "response.incomplete",
      response: { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }
    })
  })
})
