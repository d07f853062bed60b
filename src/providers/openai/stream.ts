import { Exit, Schema } from "effect"
import * as Sse from "effect/encoding/Sse"
import type { TokenUsage } from "../../domain/TokenUsage.ts"
import { makeEventSplitter } from "../sseEvents.ts"
import { ChatCompletionChunk } from "./chat.ts"
import { chatCompletionsUsage } from "./usage.ts"

/** What a streamed answer carries: its chunks, then `[DONE]`. */
export type StreamEvent = { readonly _tag: "Chunk"; readonly chunk: ChatCompletionChunk } | { readonly _tag: "Done" }

export const DONE: StreamEvent = { _tag: "Done" }

/**
 * One piece of a stream as it is relayed: the bytes the client gets, the events they complete, and
 * the provider's token usage they carried (read once, by the stream's reader), if they did.
 */
export interface StreamPiece {
  readonly bytes: Uint8Array
  readonly events: ReadonlyArray<StreamEvent>
  readonly usage?: TokenUsage | undefined
}

/** A chunk with its usage read apart: an odd usage costs the chunk nothing (its text is the record's). */
const decodeChunk = Schema.decodeUnknownExit(
  Schema.fromJsonString(Schema.Struct({ ...ChatCompletionChunk.fields, usage: Schema.optionalKey(Schema.Unknown) }))
)

/**
 * `"usage":null` as a member, with its comma: every chunk carries it once a stream is asked for its
 * usage. Only a member can match (a JSON string holds no unescaped quote); the spaces are a line's
 * own, never a line break (a chunk's data is one line).
 */
const NULL_USAGE = /,[ \t]*"usage"[ \t]*:[ \t]*null|"usage"[ \t]*:[ \t]*null[ \t]*,?[ \t]*/g

const encoder = new TextEncoder()

/**
 * Reads the events out of OpenAI SSE bytes as they arrive (an event split across chunks is
 * completed by the next). It reads: the bytes are relayed as they came. An event that is not a
 * chunk the gateway understands (a comment, a provider's own event) is passed over.
 *
 * `hideUsage`: the gateway asked for the usage (`stream_options.include_usage`) and the client did
 * not. The usage is read as ever, but the client gets the stream it would have got without asking:
 * whole events are relayed (a piece that completes none relays no bytes), as sent, except the usage
 * chunk (no choices, a usage), which is dropped, and the `"usage":null` of every other chunk, which is
 * taken out of its text.
 */
export const makeChunkReader = (options: { readonly hideUsage?: boolean } = {}) => {
  const decoder = new TextDecoder()
  let events: Array<StreamEvent> = []
  let usage: TokenUsage | undefined
  // The last event read was the usage chunk (for `hideUsage`).
  let usageChunk = false
  const parser = Sse.makeParser((event) => {
    if (event._tag !== "Event" || event.event !== "message") return
    if (event.data === "[DONE]") {
      events.push(DONE)
      return
    }
    const decoded = decodeChunk(event.data)
    if (Exit.isFailure(decoded)) return
    const { usage: carried, ...chunk } = decoded.value
    // The last chunk, when the stream was asked for it (`stream_options.include_usage`).
    if (carried != null) usage = chatCompletionsUsage(carried) ?? usage
    usageChunk = carried != null && chunk.choices.length === 0
    events.push({ _tag: "Chunk", chunk })
  })
  const piece = (bytes: Uint8Array): StreamPiece => (usage === undefined ? { bytes, events } : { bytes, events, usage })
  if (options.hideUsage !== true) {
    return (bytes: Uint8Array): StreamPiece => {
      events = []
      usage = undefined
      parser.feed(decoder.decode(bytes, { stream: true }))
      return piece(bytes)
    }
  }
  const split = makeEventSplitter()
  // Whether the last event was relayed (an LF that turns out to be its own goes with it).
  let relayedLast = true
  return (bytes: Uint8Array): StreamPiece => {
    events = []
    usage = undefined
    const { tail, events: texts } = split(decoder.decode(bytes, { stream: true }))
    let relayed = ""
    if (tail) {
      parser.feed("\n")
      if (relayedLast) relayed += "\n"
    }
    for (const text of texts) {
      usageChunk = false
      parser.feed(text)
      relayedLast = !usageChunk
      if (relayedLast) relayed += text.replace(NULL_USAGE, "")
    }
    return piece(encoder.encode(relayed))
  }
}

/** Events as the SSE bytes a client gets. */
export const encodeEvents = (events: ReadonlyArray<StreamEvent>): StreamPiece => ({
  bytes: encoder.encode(
    events.map((event) => `data: ${event._tag === "Done" ? "[DONE]" : JSON.stringify(event.chunk)}\n\n`).join("")
  ),
  events
})
