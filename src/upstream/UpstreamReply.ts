import type { Readable } from "node:stream"
import type { Redacted, Stream } from "effect"
import type { TokenUsage } from "../domain/TokenUsage.ts"
import type { UpstreamStreamError } from "../providers/errors.ts"
import type { ChatCompletion } from "../providers/openai/chat.ts"
import type { StreamEvent, StreamPiece } from "../providers/openai/stream.ts"
import type { UpstreamProvider } from "./UpstreamConfig.ts"

// What goes to the relay (`Upstream`) and what comes back.

/** Which provider a request goes to, with which key. Base URLs come only from configuration (or the routes file). */
export interface UpstreamTarget {
  readonly provider: UpstreamProvider
  readonly apiKey: Redacted.Redacted<string>
  /** A routed target's own base URL, split (`splitBaseUrl`); default: the provider's configured one. */
  readonly endpoint?: { readonly origin: string; readonly prefix: string } | undefined
  /** A routed target's deadline for the response head of one attempt; default `UPSTREAM_FIRST_BYTE_TIMEOUT_MS`. */
  readonly firstByteTimeoutMs?: number | undefined
}

/** A provider's answer: as it sent it, or translated into the format of the API the client called. */
export type UpstreamReply =
  | {
      readonly _tag: "Body"
      readonly status: number
      readonly headers: Readonly<Record<string, string>>
      readonly contentType: string
      /** Relayed byte for byte, or as translated. */
      readonly body: Uint8Array
      /** The provider's token usage in the answer (a model call's: none from `models`, or when it has none). */
      readonly usage?: TokenUsage | undefined
      /** The body's JSON, parsed once (a model call's answer; `undefined`: none, or not JSON). */
      readonly json?: unknown
    }
  | {
      readonly _tag: "EventStream"
      readonly status: number
      readonly headers: Readonly<Record<string, string>>
      /**
       * SSE bytes as they arrive, or as translated, with the chunks they carry and,
       * on the piece that carried it, the provider's token usage; fails in-band after the response has started.
       */
      readonly pieces: Stream.Stream<StreamPiece, UpstreamStreamError>
      /** Ends `pieces` early with `error` (the provider's connection closed). */
      readonly cut: (error: UpstreamStreamError) => void
    }

/** A call the gateway passes through unread (files, embeddings, audio, batches, …). */
export interface PassthroughRequest {
  readonly method: string
  /** The path after the provider's base URL, with the query: `/files?purpose=batch`. */
  readonly path: string
  /** The client's headers, already without the gateway's own and the hop-by-hop ones. */
  readonly headers: Readonly<Record<string, string>>
  /** Streamed to the provider as it arrives; `null` without a body. */
  readonly body: Readable | null
}

/**
 * The provider's answer to a passed-through call: status and headers as sent, the body as it arrives;
 * an error's body (status >= 400) read and relayed with the keys redacted (`passthroughError.ts`).
 */
export interface PassthroughReply {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Readable | Uint8Array
}

export interface ChatOptions {
  /** Client headers passed on to the provider (already filtered). */
  readonly headers: Readonly<Record<string, string>>
}

/** A reader of a provider's stream, made per answer: the events each piece of bytes completes. */
export type StreamReader = () => (bytes: Uint8Array) => StreamPiece

/**
 * How a translated answer (`ChatTranslation`) goes back in the format of the API the client called: a stream's
 * events (read as chat chunks) written as that API's events, a whole answer (read as a chat
 * completion) as that API's object.
 */
export interface TranslatedAnswer {
  /** The stream ends with a usage chunk (the client asked for it, or its API always carries it). */
  readonly includeUsage: boolean
  readonly encodeStream: (created: number) => (events: ReadonlyArray<StreamEvent>) => StreamPiece
  readonly encodeBody: (completion: ChatCompletion) => unknown
}
