import { Exit, Result, Schema } from "effect"
import { UpstreamUnreachable } from "../errors.ts"
import type { Provider } from "../Provider.ts"
import { toOpenAiCompletion, toOpenAiModelList } from "./fromAnthropic.ts"
import { AnthropicMessage, AnthropicModelList } from "./messages.ts"
import { makeStreamTranslator } from "./streamTranslator.ts"
import { toAnthropicRequest } from "./toAnthropicRequest.ts"
import { messagesUsage } from "./usage.ts"

/** The Messages API version the gateway speaks, unless the client names its own. */
export const ANTHROPIC_VERSION = "2023-06-01"

/** A provider answer in its documented shape, or a 502: the provider sent something else. */
const decoder = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) => {
  const decode = Schema.decodeUnknownExit(Schema.fromJsonString(schema))
  return (bytes: Uint8Array): Result.Result<S["Type"], UpstreamUnreachable> => {
    const decoded = decode(new TextDecoder().decode(bytes))
    return Exit.isSuccess(decoded)
      ? Result.succeed(decoded.value)
      : Result.fail(new UpstreamUnreachable({ message: "The upstream provider sent a malformed response" }))
  }
}

const decodeMessage = decoder(AnthropicMessage)
const decodeModelList = decoder(AnthropicModelList)

/** Anthropic: Messages natively; Chat Completions (and Responses through it) translated. */
export const anthropic: Provider = {
  name: "anthropic",
  authHeaders: (apiKey, client) => ({
    "x-api-key": apiKey,
    "anthropic-version": client["anthropic-version"] ?? ANTHROPIC_VERSION
  }),
  clientHeaders: ["anthropic-beta", "anthropic-version"],
  // Its SDKs always name the API version.
  isOwnClient: (headers) => headers["anthropic-version"] !== undefined,
  errorFormat: "anthropic",
  unreadableError: (message) => ({ type: "error", error: { type: "api_error", message } }),
  usage: { "/messages": messagesUsage },
  modelList: (body) => Result.map(decodeModelList(body), toOpenAiModelList),
  chat: {
    api: "messages",
    path: "/messages",
    request: toAnthropicRequest,
    stream: makeStreamTranslator,
    answer: (body, created) =>
      Result.map(decodeMessage(body), (message) => {
        // Read once, for the translation, the span and the metrics (`respond`).
        const usage = messagesUsage(message.usage)
        return { completion: toOpenAiCompletion(message, created, usage), usage }
      })
  },
  capabilities: { responses: false, promptCache: "breakpoints" }
}
