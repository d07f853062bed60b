import { Effect, Result, Schema } from "effect"
import { MessagesRequest, toChatMessages, withSystemContext } from "../anthropic/messagesRequest.ts"
import { makeMessagesReader } from "../anthropic/streamTranslator.ts"
import { describeIssue } from "../pipeline/ChatRequest.ts"
import { replyOfMessage } from "../pipeline/record.ts"
import type { TranslatedAnswer } from "../upstream/Upstream.ts"
import type { ApiAdapter, Outbound } from "./ApiAdapter.ts"

const decodeFields = Schema.decodeUnknownExit(MessagesRequest)

/**
 * A Messages request to Anthropic: the context block in `system`, after the operator's. Sent as
 * it is (`answer` none: relayed as Anthropic answers, a stream read on the side for the record),
 * or as the translation of another API's request, whose answer goes back in that API's format.
 */
export const toAnthropic = (body: Readonly<Record<string, unknown>>, answer?: TranslatedAnswer): Outbound => ({
  api: "messages",
  body,
  withContext: withSystemContext,
  send: (upstream, target, body, options) =>
    answer === undefined
      ? upstream.relay(target, "/messages", body, options, makeMessagesReader)
      : upstream.viaAnthropic(target, body, options, answer)
})

/** Anthropic's Messages API, `POST /v1/messages`: to Anthropic, natively. */
export const messages: ApiAdapter = {
  api: "messages",
  path: "/v1/messages",
  errorFormat: "anthropic",
  nativeProvider: "anthropic",
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
  outbound: (request) => Result.succeed(toAnthropic(request.body)),
  replyOf: replyOfMessage,
  streamError: (code, message) => ({
    type: "error",
    error: { type: code === "server_shutting_down" ? "overloaded_error" : "api_error", message, code }
  })
}
