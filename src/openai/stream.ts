import { Exit, Schema } from "effect"
import * as Sse from "effect/encoding/Sse"
import { ChatCompletionChunk } from "./chat.ts"

/** What a streamed answer carries: its chunks, then `[DONE]`. */
export type StreamEvent = { readonly _tag: "Chunk"; readonly chunk: ChatCompletionChunk } | { readonly _tag: "Done" }

export const DONE: StreamEvent = { _tag: "Done" }

/** One piece of a stream as it is relayed: the bytes the client gets, and the events they complete. */
export interface StreamPiece {
  readonly bytes: Uint8Array
  readonly events: ReadonlyArray<StreamEvent>
}

const decodeChunk = Schema.decodeUnknownExit(Schema.fromJsonString(ChatCompletionChunk))

/**
 * Reads the events out of OpenAI SSE bytes as they arrive (an event split across chunks is
 * completed by the next). It reads: the bytes are relayed as they came. An event that is not a
 * chunk the gateway understands (a comment, a provider's own event) is passed over.
 */
export const makeChunkReader = () => {
  const decoder = new TextDecoder()
  let events: Array<StreamEvent> = []
  const parser = Sse.makeParser((event) => {
    if (event._tag !== "Event" || event.event !== "message") return
    if (event.data === "[DONE]") {
      events.push(DONE)
      return
    }
    const chunk = decodeChunk(event.data)
    if (Exit.isSuccess(chunk)) events.push({ _tag: "Chunk", chunk: chunk.value })
  })
  return (bytes: Uint8Array): StreamPiece => {
    events = []
    parser.feed(decoder.decode(bytes, { stream: true }))
    return { bytes, events }
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
