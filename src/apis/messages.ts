import { Effect, Exit, Predicate, Result, Schema } from "effect"
import { messageText } from "../domain/messageText.ts"
import type { ConversationShape } from "../injection/conversationTail.ts"
import { toOpenAiCompletion } from "../providers/anthropic/fromAnthropic.ts"
import { AnthropicMessage } from "../providers/anthropic/messages.ts"
import { toChatMessages, withSystemContext } from "../providers/anthropic/messagesRequest.ts"
import { makeMessagesReader } from "../providers/anthropic/streamTranslator.ts"
import type { AssembledReply } from "../providers/openai/StreamAssembler.ts"
import type { ApiAdapter, Outbound, Translated } from "./ApiAdapter.ts"
import { describeIssue } from "./ChatRequest.ts"
import { MessagesRequest } from "./ServiceOptions.ts"

const decodeFields = Schema.decodeUnknownExit(MessagesRequest)

const decodeAnthropicMessage = Schema.decodeUnknownExit(AnthropicMessage)

/** A non-streamed Anthropic Messages answer as an assembled reply (none: not a message). */
const replyOfMessage = (json: unknown): AssembledReply | undefined => {
  const message = decodeAnthropicMessage(json)
  if (Exit.isFailure(message)) return undefined
  const [choice] = toOpenAiCompletion(message.value, 0).choices
  return choice === undefined
    ? undefined
    : {
        answerId: message.value.id,
        content: messageText(choice.message.content),
        toolCalls: choice.message.tool_calls ?? [],
        finishReason: choice.finish_reason ?? null
      }
}

/**
 * A Messages request's conversation: its messages; a turn's context goes in a user message of its own
 * (the system is one field before everything: Anthropic joins consecutive user messages into one turn).
 */
const messagesConversation: ConversationShape = {
  items: (body) => (Array.isArray(body["messages"]) ? body["messages"] : []),
  withItems: (body, items) => ({ ...body, messages: items }),
  blockItem: (text) => ({ role: "user", content: [{ type: "text", text }] }),
  isAnswer: (item) => Predicate.isObject(item) && item["role"] === "assistant"
}

/**
 * A Messages request to its provider: the context block in `system`, after the operator's. Sent as
 * it is (`translated` none: relayed as the provider answers, a stream read on the side for the record),
 * or as the translation of another API's request, whose answer goes back in that API's format.
 */
export const messagesOutbound = (body: Readonly<Record<string, unknown>>, translated?: Translated): Outbound => ({
  api: "messages",
  body,
  withContext: withSystemContext,
  conversation: messagesConversation,
  send: (upstream, target, body, options) =>
    translated === undefined
      ? upstream.relay(target, "/messages", body, options, makeMessagesReader)
      : upstream.translated(target, translated.translation, body, options, translated.answer)
})

/** Anthropic's Messages API, `POST /v1/messages`: to Anthropic, natively. */
export const messages: ApiAdapter = {
  api: "messages",
  path: "/v1/messages",
  errorFormat: "anthropic",
  nativeProvider: "anthropic",
  userFields: "`metadata.user_id`",
  threads: false,
  responsesState: false,
  read: (json) =>
    decodeFields(json).pipe(
      Effect.mapError(describeIssue),
      Effect.map((fields) => ({
        model: fields.model,
        messages: toChatMessages(fields.messages),
        stream: fields.stream === true,
        includeUsage: false,
        service: fields.service,
        userIds: [["metadata.user_id", fields.metadata?.user_id]]
      }))
    ),
  outbound: (request) => Result.succeed(messagesOutbound(request.body)),
  replyOf: replyOfMessage,
  streamError: (code, message) => ({
    type: "error",
    error: { type: code === "server_shutting_down" ? "overloaded_error" : "api_error", message, code }
  })
}
