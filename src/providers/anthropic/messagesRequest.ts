import { Option, Schema } from "effect"
import type { ChatMessage, ContentPart } from "../openai/chat.ts"

/**
 * `POST /v1/messages` as an Anthropic client sends it, as far as the gateway reads it. Decoding
 * keeps only these fields; the request goes to Anthropic as sent, the context block added to
 * `system`, nothing else rebuilt.
 */

/** What a tool result carries: text, or blocks (text, images, …). */
const ToolResultContent = Schema.Union([
  Schema.String,
  Schema.Array(Schema.Struct({ type: Schema.String, text: Schema.optionalKey(Schema.String) }))
])

/** A block of a request message: text, image, document, tool use, tool result, thinking, … */
export const RequestBlock = Schema.Struct({
  type: Schema.String,
  text: Schema.optionalKey(Schema.String),
  id: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(Schema.String),
  input: Schema.optionalKey(Schema.Unknown),
  tool_use_id: Schema.optionalKey(Schema.String),
  content: Schema.optionalKey(ToolResultContent),
  /** An image's or a document's content, and a document's title: read for the record only, never checked. */
  source: Schema.optionalKey(Schema.Unknown),
  title: Schema.optionalKey(Schema.Unknown)
})
export type RequestBlock = typeof RequestBlock.Type

export const RequestMessage = Schema.Struct({
  role: Schema.Literals(["user", "assistant"]),
  content: Schema.Union([Schema.String, Schema.Array(RequestBlock)])
})
export type RequestMessage = typeof RequestMessage.Type

/** A block of `system`: text, perhaps with `cache_control`, kept as sent. */
export const SystemBlock = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })

/** The fields of `POST /v1/messages` the gateway reads. */
export const MessagesRequest = Schema.Struct({
  model: Schema.NonEmptyString,
  messages: Schema.Array(RequestMessage).check(Schema.isMinLength(1)),
  system: Schema.optionalKey(Schema.Union([Schema.String, Schema.Array(SystemBlock)])),
  stream: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  metadata: Schema.optionalKey(
    Schema.NullOr(Schema.Struct({ user_id: Schema.optionalKey(Schema.NullOr(Schema.String)) }))
  )
})
export type MessagesRequest = typeof MessagesRequest.Type

const toolResultText = (content: RequestBlock["content"]) =>
  content === undefined
    ? ""
    : typeof content === "string"
      ? content
      : content.map((part) => part.text ?? `[${part.type}]`).join("\n")

/** An image's or a document's `source`, as far as the record reads it. */
const MediaSource = Schema.Union([
  Schema.Struct({ type: Schema.Literal("base64"), media_type: Schema.String, data: Schema.String }),
  Schema.Struct({ type: Schema.Literal("url"), url: Schema.String }),
  Schema.Struct({ type: Schema.Literal("text"), data: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("content"),
    content: Schema.Union([
      Schema.String,
      Schema.Array(Schema.Struct({ type: Schema.String, text: Schema.optionalKey(Schema.String) }))
    ])
  })
])
const decodeSource = Schema.decodeUnknownOption(MediaSource)

const textAsDataUrl = (text: string) => `data:text/plain;base64,${Buffer.from(text, "utf8").toString("base64")}`

/**
 * A user block as a chat content part: text as text; an image or a document sent with the request keeps
 * its type (the record names it `[image]`) and carries its content in chat's fields (`image_url`,
 * `file`: `openai/mediaParts.ts`), a plain-text document as a text file. One given by file id, or a
 * document by URL, stays a bare placeholder.
 */
export const blockAsChat = (block: RequestBlock): ContentPart => {
  if (block.type === "text") return { type: "text", text: block.text ?? "" }
  const source = Option.getOrUndefined(decodeSource(block.source))
  if (block.type === "image" && source !== undefined) {
    if (source.type === "base64")
      return { type: block.type, image_url: { url: `data:${source.media_type};base64,${source.data}` } }
    if (source.type === "url") return { type: block.type, image_url: { url: source.url } }
  }
  if (block.type === "document" && source !== undefined && source.type !== "url") {
    const filename = typeof block.title === "string" ? { filename: block.title } : {}
    const fileData =
      source.type === "base64"
        ? `data:${source.media_type};base64,${source.data}`
        : textAsDataUrl(
            source.type === "text"
              ? source.data
              : typeof source.content === "string"
                ? source.content
                : source.content.flatMap((part) => (part.text === undefined ? [] : [part.text])).join("\n")
          )
    return { type: block.type, file: { file_data: fileData, ...filename } }
  }
  return { type: block.type }
}

/**
 * The conversation as chat messages, for what the gateway does with it besides forwarding: the
 * latest user text ranks memories, the new user messages and tool results are recorded. A user
 * message's tool results become `tool` messages, as they are in the chat format.
 */
export const toChatMessages = (messages: ReadonlyArray<RequestMessage>): ReadonlyArray<ChatMessage> =>
  messages.flatMap((message): ReadonlyArray<ChatMessage> => {
    if (typeof message.content === "string") return [{ role: message.role, content: message.content }]
    if (message.role === "assistant") {
      const text = message.content.flatMap((block) =>
        block.type === "text" && block.text !== undefined ? [block.text] : []
      )
      return [{ role: "assistant", content: text.join("") }]
    }
    const results: Array<ChatMessage> = message.content
      .filter((block) => block.type === "tool_result")
      .map((block) => ({
        role: "tool",
        content: toolResultText(block.content),
        tool_call_id: block.tool_use_id ?? null
      }))
    const parts: Array<ContentPart> = message.content.filter((block) => block.type !== "tool_result").map(blockAsChat)
    return parts.length === 0 ? results : [...results, { role: "user", content: parts }]
  })

/**
 * The body with the context block after the caller's system prompt: appended to a string, or as a
 * last text block after the caller's blocks (as sent, `cache_control` and all), so their cache
 * breakpoints still cache the same prefix.
 */
export const withSystemContext = (body: Readonly<Record<string, unknown>>, block: string): Record<string, unknown> => {
  const system = body["system"]
  return {
    ...body,
    system: Array.isArray(system)
      ? [...system, { type: "text", text: block }]
      : typeof system === "string" && system !== ""
        ? `${system}\n\n${block}`
        : block
  }
}
