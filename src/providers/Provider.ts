import type { Result } from "effect"
import type { TokenUsage } from "../domain/TokenUsage.ts"
import type { UnsupportedParameter, UpstreamStreamError, UpstreamUnreachable } from "./errors.ts"
import type { ChatCompletion } from "./openai/chat.ts"
import type { StreamEvent } from "./openai/stream.ts"
import type { ProviderName } from "./ProviderName.ts"
import type { UsageReader } from "./usage.ts"

/** The model APIs the gateway reads and writes: OpenAI Chat Completions and Responses, Anthropic Messages. */
export type ProviderApi = "chat.completions" | "responses" | "messages"

/**
 * Everything the gateway knows of one provider, in one place: how it is called (auth, the client
 * headers it takes), how its answers are read (usage per path, model list, errors), how a Chat
 * Completions request reaches it when it does not speak that API, and what it can do. The relay
 * (`upstream/`), the adapters (`apis/`) and the pipeline ask the Provider (`providers.ts`) and never
 * compare its name. A new provider is one more folder and one more entry (see `README.md`).
 */
export interface Provider {
  readonly name: ProviderName
  /** The headers that authorize a call with `apiKey`; `client`: the client's forwarded headers (an API version it names). */
  readonly authHeaders: (
    apiKey: string,
    client: Readonly<Record<string, string | undefined>>
  ) => Readonly<Record<string, string>>
  /** The client headers of this provider's that go to it (`openai-project`, `anthropic-beta`, …). */
  readonly clientHeaders: ReadonlyArray<string>
  /** The client is one of this provider's own SDKs (Anthropic's always name `anthropic-version`): its calls go here. */
  readonly isOwnClient: (headers: Readonly<Record<string, string | undefined>>) => boolean
  /** The error body its own SDKs read. */
  readonly errorFormat: "openai" | "anthropic"
  /** The body of an error answer the gateway could not read (a passed-through call's), in the provider's shape. */
  readonly unreadableError: (message: string) => unknown
  /** The reader of the usage in the answers of each model path the gateway calls (`/chat/completions`, `/messages`). */
  readonly usage: Readonly<Record<string, UsageReader>>
  /** `GET /models`'s answer in OpenAI's format (what the client reads); none: relayed as the provider sent it. */
  readonly modelList: ((body: Uint8Array) => Result.Result<unknown, UpstreamUnreachable>) | undefined
  /** How a Chat Completions request reaches it when it does not speak that API (Anthropic: as Messages); none: natively. */
  readonly chat: ChatTranslation | undefined
  readonly capabilities: ProviderCapabilities
}

export interface ProviderCapabilities {
  /**
   * It serves OpenAI's Responses API itself and can keep its state (`UPSTREAM_RESPONSES_STATE` decides
   * who does); otherwise a Responses request goes to it through Chat Completions and the gateway keeps the state.
   */
  readonly responses: boolean
  /** The prompt-cache hint it takes: OpenAI's `prompt_cache_key` (`key`) or Anthropic's `cache_control` breakpoints. */
  readonly promptCache: "key" | "breakpoints"
}

/** The APIs a translation writes: each has its body's shape in `apis/translated.ts` (another is one more entry there). */
export type TranslatedApi = Extract<ProviderApi, "messages">

/** A Chat Completions request translated into the provider's own API, and its answers translated back to chat. */
export interface ChatTranslation {
  /** The provider's API the request is translated into (its body's shape: `apis/translated.ts`). */
  readonly api: TranslatedApi
  /** Its path, after the provider's base URL. */
  readonly path: `/${string}`
  /** The chat request as that API's, or the parameter the translation cannot carry. */
  readonly request: (
    chat: Readonly<Record<string, unknown>>
  ) => Result.Result<Readonly<Record<string, unknown>>, UnsupportedParameter>
  /** A reader of a streamed answer as chat chunks, made per answer. */
  readonly stream: (options: { readonly includeUsage: boolean; readonly created: number }) => ChatStreamTranslator
  /** A whole answer as a chat completion, with its usage; a 502's error when it is not in the API's shape. */
  readonly answer: (
    body: Uint8Array,
    created: number
  ) => Result.Result<
    { readonly completion: ChatCompletion; readonly usage: TokenUsage | undefined },
    UpstreamUnreachable
  >
}

/** A provider's stream read as chat chunks, one network chunk at a time. */
export interface ChatStreamTranslator {
  /** The events the bytes completed, or the in-band error the provider sent. */
  readonly feed: (bytes: Uint8Array) => Result.Result<ReadonlyArray<StreamEvent>, UpstreamStreamError>
  /** The usage the last `feed` completed, if it did. */
  readonly usageFed: () => TokenUsage | undefined
  /** The model and usage of the answer so far. */
  readonly answer: () => { readonly model: string | undefined; readonly usage: TokenUsage | undefined }
}
