import { Effect, Result, Schema } from "effect"
import { toAnthropicRequest } from "../anthropic/toAnthropicRequest.ts"
import { injectContext } from "../injection/injectContext.ts"
import { ChatCompletionRequest, type ChatMessage } from "../openai/chat.ts"
import { encodeEvents, makeChunkReader } from "../openai/stream.ts"
import { describeIssue } from "../pipeline/ChatRequest.ts"
import { replyOfCompletion } from "../pipeline/record.ts"
import type { ApiAdapter } from "./ApiAdapter.ts"
import { toAnthropic } from "./messages.ts"

const decodeFields = Schema.decodeUnknownExit(ChatCompletionRequest)

/** OpenAI Chat Completions, `POST /v1/chat/completions`: to OpenAI as it is, to Anthropic translated. */
export const chatCompletions: ApiAdapter = {
  api: "chat.completions",
  path: "/v1/chat/completions",
  errorFormat: "openai",
  nativeProvider: undefined,
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
  outbound: (request, provider) =>
    provider === "anthropic"
      ? Result.map(toAnthropicRequest(request.body), (body) =>
          toAnthropic(body, {
            includeUsage: request.includeUsage,
            encodeStream: () => encodeEvents,
            encodeBody: (completion) => completion
          })
        )
      : Result.succeed({
          api: "chat.completions",
          body: request.body,
          // After the caller's first system message.
          withContext: (body, context) => ({
            ...body,
            messages: injectContext(body["messages"] as ReadonlyArray<ChatMessage>, context)
          }),
          send: (upstream, target, body, options) =>
            upstream.relay(target, "/chat/completions", body, options, makeChunkReader)
        }),
  replyOf: replyOfCompletion,
  streamError: (code, message) => ({
    error: { message, type: code === "server_shutting_down" ? "server_error" : "upstream_error", code, param: null }
  })
}
