import { Exit, Schema } from "effect"
import * as Sse from "effect/encoding/Sse"
import type { TokenUsage } from "../../domain/TokenUsage.ts"
import type { ChatMessage, ContentPart, ToolCall } from "./chat.ts"
import { DONE, type StreamEvent, type StreamPiece } from "./stream.ts"
import { responsesUsage } from "./usage.ts"

/**
 * The OpenAI Responses API (`POST /v1/responses`), as far as the gateway reads it. The request goes
 * to the provider as sent, the context block added to `instructions`; `previous_response_id`,
 * `store` and everything else are forwarded untouched, so conversation state stays the provider's.
 */

/** A part of an input message: `input_text`, `input_image`, `input_file`, an earlier answer's `output_text`, … */
export const InputPart = Schema.Struct({
  type: Schema.String,
  text: Schema.optionalKey(Schema.String),
  refusal: Schema.optionalKey(Schema.String),
  image_url: Schema.optionalKey(Schema.NullOr(Schema.String)),
  /** An `input_file`'s content and name: read for the record only, never checked (the input goes as sent). */
  file_data: Schema.optionalKey(Schema.Unknown),
  filename: Schema.optionalKey(Schema.Unknown)
})
export type InputPart = typeof InputPart.Type

/** An input item: a message, a function call or its output; other kinds (reasoning, …) are kept as sent. */
export const InputItem = Schema.Struct({
  type: Schema.optionalKey(Schema.String),
  role: Schema.optionalKey(Schema.String),
  content: Schema.optionalKey(Schema.Union([Schema.String, Schema.Array(InputPart)])),
  call_id: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(Schema.String),
  arguments: Schema.optionalKey(Schema.String),
  output: Schema.optionalKey(Schema.Union([Schema.String, Schema.Array(InputPart)]))
})
export type InputItem = typeof InputItem.Type

/** The fields of `POST /v1/responses` the gateway reads. */
export const ResponsesRequest = Schema.Struct({
  model: Schema.NonEmptyString,
  input: Schema.optionalKey(Schema.Union([Schema.String, Schema.Array(InputItem)])),
  instructions: Schema.optionalKey(Schema.NullOr(Schema.String)),
  stream: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  safety_identifier: Schema.optionalKey(Schema.String),
  user: Schema.optionalKey(Schema.String),
  metadata: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)))
})
export type ResponsesRequest = typeof ResponsesRequest.Type

/** An output item of a response: a message with `output_text` parts, a function call, or another kind. */
export const OutputItem = Schema.Struct({
  type: Schema.String,
  role: Schema.optionalKey(Schema.String),
  content: Schema.optionalKey(
    Schema.Array(
      Schema.Struct({
        type: Schema.String,
        text: Schema.optionalKey(Schema.String),
        refusal: Schema.optionalKey(Schema.String)
      })
    )
  ),
  call_id: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(Schema.String),
  arguments: Schema.optionalKey(Schema.String)
})

/** A response object (`object: "response"`), as a non-streamed answer or in a stream's last event. */
export const ResponseObject = Schema.Struct({
  id: Schema.optionalKey(Schema.String),
  status: Schema.optionalKey(Schema.NullOr(Schema.String)),
  output: Schema.Array(OutputItem)
})
export type ResponseObject = typeof ResponseObject.Type

const partText = (parts: string | ReadonlyArray<{ readonly type: string; readonly text?: string }> | undefined) =>
  parts === undefined
    ? ""
    : typeof parts === "string"
      ? parts
      : parts.map((part) => part.text ?? `[${part.type}]`).join("\n")

/**
 * An input part as a chat content part: text as text; an image or a file sent with the request keeps
 * its type (the record names it `[input_image]`) and carries its content in chat's fields
 * (`image_url`, `file`: `mediaParts.ts`). One given by id or by a file URL stays a bare placeholder.
 */
export const inputPartAsChat = (part: InputPart): ContentPart => {
  if (part.type === "input_text" || part.type === "output_text") return { type: "text", text: part.text ?? "" }
  if (part.type === "input_image" && typeof part.image_url === "string" && part.image_url !== "")
    return { type: part.type, image_url: { url: part.image_url } }
  if (part.type === "input_file" && typeof part.file_data === "string" && part.file_data !== "")
    return {
      type: part.type,
      file: { file_data: part.file_data, ...(typeof part.filename === "string" ? { filename: part.filename } : {}) }
    }
  return { type: part.type }
}

/**
 * The input as chat messages, for what the gateway does with it besides forwarding: the latest user
 * text ranks memories; the new user messages and function outputs are recorded. A function call
 * stands for the assistant's turn, so what comes before it is not recorded again.
 */
export const inputAsChatMessages = (input: ResponsesRequest["input"]): ReadonlyArray<ChatMessage> => {
  if (input === undefined) return []
  if (typeof input === "string") return [{ role: "user", content: input }]
  return input.flatMap((item): ReadonlyArray<ChatMessage> => {
    const type = item.type ?? "message"
    if (type === "message" && item.role !== undefined) {
      const content = typeof item.content === "string" ? item.content : (item.content ?? []).map(inputPartAsChat)
      return [{ role: item.role, content }]
    }
    if (type === "function_call") {
      return [
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: item.call_id ?? "",
              type: "function",
              function: { name: item.name ?? "", arguments: item.arguments ?? "" }
            }
          ]
        }
      ]
    }
    if (type === "function_call_output")
      return [{ role: "tool", content: partText(item.output), tool_call_id: item.call_id ?? null }]
    return []
  })
}

/** The body with the context block after the caller's `instructions`. */
export const withInstructionsContext = (
  body: Readonly<Record<string, unknown>>,
  block: string
): Record<string, unknown> => {
  const instructions = body["instructions"]
  return {
    ...body,
    instructions: typeof instructions === "string" && instructions !== "" ? `${instructions}\n\n${block}` : block
  }
}

/** What a response said: its text, its function calls, and how it ended in chat terms. */
export const responseReply = (response: ResponseObject) => {
  const text = response.output
    .filter((item) => item.type === "message")
    .flatMap((item) => (item.content ?? []).map((part) => part.text ?? part.refusal ?? ""))
    .join("")
  const toolCalls: Array<ToolCall> = response.output
    .filter((item) => item.type === "function_call")
    .map((item) => ({
      id: item.call_id ?? "",
      type: "function",
      function: { name: item.name ?? "", arguments: item.arguments ?? "" }
    }))
  const finishReason = response.status === "incomplete" ? "length" : toolCalls.length > 0 ? "tool_calls" : "stop"
  return { text, toolCalls, finishReason }
}

/** The stream events that end a response, each carrying the whole response object. */
const FINAL_EVENTS = new Set(["response.completed", "response.incomplete"])
/** A final event's data, found without parsing every delta (for providers that send no `event:` lines). */
const FINAL_DATA = /"type"\s*:\s*"response\.(completed|incomplete)"/
/**
 * A final event's response, with what the provider call's span notes: the model and the tokens
 * counted, read apart (`responsesUsage`) so that an odd usage never costs the turn its record.
 */
const FinalResponse = Schema.Struct({
  ...ResponseObject.fields,
  model: Schema.optionalKey(Schema.Unknown),
  usage: Schema.optionalKey(Schema.Unknown)
})
const decodeFinalEvent = Schema.decodeUnknownExit(
  Schema.fromJsonString(Schema.Struct({ type: Schema.String, response: FinalResponse }))
)

/**
 * Reads a Responses event stream on the side while its bytes are relayed as they came. The deltas
 * are not needed: the last event (`response.completed`, or `response.incomplete`) carries the
 * whole response, which becomes one chat chunk and the end, for the assembler that records the turn.
 * A failed response (`response.failed`, `error`) never completes, so it is not recorded.
 */
export const makeResponsesReader = (finished?: (response: Readonly<Record<string, unknown>>) => void) => {
  const decoder = new TextDecoder()
  let events: Array<StreamEvent> = []
  let usage: TokenUsage | undefined
  const parser = Sse.makeParser((event) => {
    if (
      event._tag !== "Event" ||
      !(FINAL_EVENTS.has(event.event) || (event.event === "message" && FINAL_DATA.test(event.data)))
    )
      return
    const final = decodeFinalEvent(event.data)
    if (Exit.isFailure(final)) return
    // Decoded, the response is only what the record needs; the whole of it is what a kept response stores.
    if (finished !== undefined) finished((JSON.parse(event.data) as { response: Record<string, unknown> }).response)
    const { text, toolCalls, finishReason } = responseReply(final.value.response)
    const { model } = final.value.response
    const carried = final.value.response.usage
    usage = carried == null ? undefined : responsesUsage(carried)
    events.push({
      _tag: "Chunk",
      chunk: {
        ...(final.value.response.id === undefined ? {} : { id: final.value.response.id }),
        ...(typeof model === "string" ? { model } : {}),
        choices: [
          {
            index: 0,
            delta: {
              role: "assistant",
              content: text,
              tool_calls: toolCalls.map((call, index) => ({
                index,
                id: call.id,
                type: "function",
                function: call.function
              }))
            },
            finish_reason: finishReason
          }
        ]
      }
    })
    events.push(DONE)
  })
  return (bytes: Uint8Array): StreamPiece => {
    events = []
    usage = undefined
    parser.feed(decoder.decode(bytes, { stream: true }))
    return usage === undefined ? { bytes, events } : { bytes, events, usage }
  }
}
