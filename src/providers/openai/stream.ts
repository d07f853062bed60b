import { Exit, Schema } from "effect"
import * as Sse from "effect/encoding/Sse"
import type { TokenUsage } from "../../domain/TokenUsage.ts"
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
 * Reads the events out of OpenAI SSE bytes as they arrive (an event split across chunks is
 * completed by the next). It reads: the bytes are relayed as they came. An event that is not a
 * chunk the gateway understands (a comment, a provider's own event) is passed over.
 */
export const makeChunkReader = () => {
  const decoder = new TextDecoder()
  let events: Array<StreamEvent> = []
  let usage: TokenUsage | undefined
  const parser = Sse.makeParser((event) => {
    if (event._tag !== "Event" || event.event !== "message") return
    if (event.data === "[DONE]") {
      events.push(DONE)
      return
    }
    const decoded = decodeChunk(event.data)
    if (Exit.isFailure(decoded)) return
    const { usage: carried, ...chunk } = decoded.value
    // The last chunk, when the client asked (`stream_options.include_usage`).
    if (carried != null) usage = chatCompletionsUsage(carried) ?? usage
    events.push({ _tag: "Chunk", chunk })
  })
  return (bytes: Uint8Array): StreamPiece => {
    events = []
    usage = undefined
    parser.feed(decoder.decode(bytes, { stream: true }))
    return usage === undefined ? { bytes, events } : { bytes, events, usage }
  }
}

const encoder = new TextEncoder()

/** Events as the SSE bytes a client gets. */
export const encodeEvents = (events: ReadonlyArray<StreamEvent>): StreamPiece => ({
  bytes: encoder.encode(
    events.map((event) => `data: ${event._tag === "Done" ? "[DONE]" : JSON.stringify(event.chunk)}\n\n`).join("")
  ),
  events
})
