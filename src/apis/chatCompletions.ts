import { Effect, Schema } from "effect"
import { anthropicRequestOf } from "../anthropic/translatedRequest.ts"
import { injectContext } from "../context/injectContext.ts"
import { ChatCompletionRequest, type ChatMessage } from "../openai/chat.ts"
import { describeIssue } from "../pipeline/ChatRequest.ts"
import { replyOfCompletion } from "../pipeline/record.ts"
import type { ApiAdapter } from "./ApiAdapter.ts"

const decodeFields = Schema.decodeUnknownExit(ChatCompletionRequest)

/** OpenAI Chat Completions, `POST /v1/chat/completions`: to OpenAI as it is, to Anthropic translated. */
export const chatCompletions: ApiAdapter = {
  api: "chat.completions",
  nativeProvider: undefined,
  toAnthropic: (body) => anthropicRequestOf("chat.completions", body),
  read: (json) =>
    decodeFields(json).pipe(
      Effect.mapError(describeIssue),
      Effect.map((fields) => ({
        model: fields.model,
        // As sent: what the provider gets, with every field the schema does not name.
        messages: json["messages"] as ReadonlyArray<ChatMessage>,
        stream: fields.stream === true,
        includeUsage: fields.stream_options?.include_usage === true,
        service: fields.service,
        userIds: [
          ["safety_identifier", fields.safety_identifier],
          ["user", fields.user],
          ["metadata.profile_id", fields.metadata?.["profile_id"]]
        ]
      }))
    ),
  // After the caller's first system message.
  withContext: (request, context) => ({ ...request.body, messages: injectContext(request.messages, context) }),
  send: (upstream, target, body, options) => upstream.chat(target, body, options),
  replyOf: replyOfCompletion,
  streamError: (code, message) => ({
    error: { message, type: code === "server_shutting_down" ? "server_error" : "upstream_error", code, param: null }
  })
}
