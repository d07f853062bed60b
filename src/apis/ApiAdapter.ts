import type { Effect, Result } from "effect"
import type { ChatRequest, RequestReader } from "../pipeline/ChatRequest.ts"
import type { AssembledReply } from "../pipeline/StreamAssembler.ts"
import type { UnsupportedParameter, UpstreamFailure } from "../upstream/errors.ts"
import type { ChatOptions, Upstream, UpstreamReply, UpstreamTarget } from "../upstream/Upstream.ts"
import type { UpstreamProvider } from "../upstream/UpstreamConfig.ts"

/**
 * Everything the memory pipeline needs to know about one proxied API — OpenAI Chat Completions,
 * OpenAI Responses, Anthropic Messages — in one place: how to read a request (`RequestReader`),
 * where the context block goes, how to send it, how to read a non-streamed answer for the record,
 * and the shape of a stream's in-band error. The pipeline asks the adapter and never the API's
 * name; another API is one more adapter (`adapters.ts`).
 */
export interface ApiAdapter extends RequestReader {
  /** The provider that speaks this API natively when no other can (Messages: Anthropic). */
  readonly nativeProvider: UpstreamProvider | undefined
  /**
   * The request as the Anthropic Messages request it becomes, or the parameter it cannot carry; for
   * an API that reaches Anthropic translated (undefined: natively, or never).
   */
  readonly toAnthropic:
    | ((
        body: Readonly<Record<string, unknown>>
      ) => Result.Result<Readonly<Record<string, unknown>>, UnsupportedParameter>)
    | undefined
  /** The body to forward: the caller's, with the context block after the operator's instructions. */
  readonly withContext: (request: ChatRequest, context: string) => Readonly<Record<string, unknown>>
  /** Sends the body to the chosen provider; returns once its response has started. */
  readonly send: (
    upstream: Upstream["Service"],
    target: UpstreamTarget,
    body: Readonly<Record<string, unknown>>,
    options: ChatOptions
  ) => Effect.Effect<UpstreamReply, UpstreamFailure>
  /** A non-streamed answer, in this API's format, as the reply the turn records (none: not an answer). */
  readonly replyOf: (body: Uint8Array) => AssembledReply | undefined
  /** The data of the SSE `error` event that ends a stream which failed after it started. */
  readonly streamError: (code: string, message: string) => unknown
}
