import type { Effect, Result } from "effect"
import type { ErrorFormat } from "../http/OpenAiError.ts"
import type { ConversationShape } from "../injection/conversationTail.ts"
import type { UnsupportedParameter, UpstreamFailure } from "../providers/errors.ts"
import type { AssembledReply } from "../providers/openai/StreamAssembler.ts"
import type { ChatTranslation } from "../providers/Provider.ts"
import type { ProviderName } from "../providers/ProviderName.ts"
import type { Upstream } from "../upstream/Upstream.ts"
import type { ChatOptions, TranslatedAnswer, UpstreamReply, UpstreamTarget } from "../upstream/UpstreamReply.ts"
import type { ChatRequest, ProxiedApi, RequestReader } from "./ChatRequest.ts"

/**
 * Everything the memory pipeline needs to know about one proxied API — OpenAI Chat Completions,
 * OpenAI Responses, Anthropic Messages — in one place: its route, how to read a request
 * (`RequestReader`), how the request reaches a provider (`outbound`), how to read a non-streamed
 * answer for the record, and the shape of its errors. The pipeline asks the adapter and never the
 * API's name; another API is one more adapter (`adapters.ts`).
 */
export interface ApiAdapter extends RequestReader {
  /** Its route: `POST <path>` (and the paths below it share its error format). */
  readonly path: `/${string}`
  readonly errorFormat: ErrorFormat
  /** The provider that speaks this API natively when no other can (Messages: Anthropic). */
  readonly nativeProvider: ProviderName | undefined
  /** The body fields that name the user, as the 400 for a request that names none lists them. */
  readonly userFields: string
  /** The gateway keeps threads (`X-Service-Thread-Id`) of this API's conversations (elsewhere one is refused). */
  readonly threads: boolean
  /**
   * Its requests may continue stored responses (`previous_response_id`, `conversation`): kept by the
   * provider or by the gateway (`responsesStateFor`), which then takes the state fields out (`withGatewayState`).
   */
  readonly responsesState: boolean
  /**
   * The request as it goes to `provider`: as sent, or translated (once, here) into the provider's
   * API; or the parameter the translation cannot carry, refused before anything is stored.
   */
  readonly outbound: (request: ChatRequest, provider: ProviderName) => Result.Result<Outbound, UnsupportedParameter>
  /** A non-streamed answer (its parsed JSON), in this API's format, as the reply the turn records (none: not an answer). */
  readonly replyOf: (json: unknown) => AssembledReply | undefined
  /** The data of the SSE `error` event that ends a stream which failed after it started. */
  readonly streamError: (code: string, message: string) => unknown
}

/** A request on its way to the provider: its body, where the context block goes, how it is sent. */
export interface Outbound {
  /** The API `body` follows: the client's, or the one it was translated into. */
  readonly api: ProxiedApi
  /** The caller's body (without `service`), translated if the provider needs it. */
  readonly body: Readonly<Record<string, unknown>>
  /** The body with the context block after the operator's instructions (`INJECTION_PLACEMENT=system`). */
  readonly withContext: (body: Readonly<Record<string, unknown>>, context: string) => Readonly<Record<string, unknown>>
  /** How the body holds its conversation: where a turn's context goes at its tail (`INJECTION_PLACEMENT=latest`). */
  readonly conversation: ConversationShape
  /** Sends the body to the chosen provider; returns once its response has started. */
  readonly send: (
    upstream: Upstream["Service"],
    target: UpstreamTarget,
    body: Readonly<Record<string, unknown>>,
    options: ChatOptions
  ) => Effect.Effect<UpstreamReply, UpstreamFailure>
  /**
   * The whole answer object as the client got it, once it has ended: set for a Responses request
   * whose state the gateway keeps (it stores the response from it).
   */
  readonly finalResponse?: () => Readonly<Record<string, unknown>> | undefined
  /** The id the client knows the answer by, when the gateway names it (a translated response it keeps). */
  readonly answerId?: string
}

/** A request translated by a provider's `ChatTranslation`, and how its answer goes back to the client. */
export interface Translated {
  readonly translation: ChatTranslation
  readonly answer: TranslatedAnswer
}
