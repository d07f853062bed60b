import { Effect, Schema } from "effect"
import { MessagesRequest, toChatMessages, withSystemContext } from "../anthropic/messagesRequest.ts"
import { describeIssue } from "../pipeline/ChatRequest.ts"
import { replyOfMessage } from "../pipeline/record.ts"
import type { ApiAdapter } from "./ApiAdapter.ts"

const decodeFields = Schema.decodeUnknownExit(MessagesRequest)

/** Anthropic's Messages API, `POST /v1/messages`: to Anthropic, natively. */
export const messages: ApiAdapter = {
  api: "messages",
  nativeProvider: "anthropic",
  toAnthropic: undefined,
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
  // In `system`, after the operator's.
  withContext: (request, context) => withSystemContext(request.body, context),
  send: (upstream, target, body, options) => upstream.messages(target, body, options),
  replyOf: replyOfMessage,
  streamError: (code, message) => ({
    type: "error",
    error: { type: code === "server_shutting_down" ? "overloaded_error" : "api_error", message, code }
  })
}
