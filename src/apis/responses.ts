import { Effect, Schema } from "effect"
import { anthropicRequestOf } from "../anthropic/translatedRequest.ts"
import { inputAsChatMessages, ResponsesRequest, withInstructionsContext } from "../openai/responses.ts"
import { describeIssue } from "../pipeline/ChatRequest.ts"
import { replyOfResponse } from "../pipeline/record.ts"
import type { ApiAdapter } from "./ApiAdapter.ts"

const decodeFields = Schema.decodeUnknownExit(ResponsesRequest)

/** OpenAI's Responses API, `POST /v1/responses`: to OpenAI natively, to Anthropic through Chat Completions. */
export const responses: ApiAdapter = {
  api: "responses",
  nativeProvider: undefined,
  toAnthropic: (body) => anthropicRequestOf("responses", body),
  read: (json) =>
    decodeFields(json).pipe(
      Effect.mapError(describeIssue),
      Effect.map((fields) => ({
        model: fields.model,
        messages: inputAsChatMessages(fields.input),
        stream: fields.stream === true,
        includeUsage: false,
        service: fields.service,
        userIds: [
          ["safety_identifier", fields.safety_identifier],
          ["user", fields.user],
          ["metadata.profile_id", fields.metadata?.["profile_id"]]
        ]
      }))
    ),
  // After the operator's `instructions`.
  withContext: (request, context) => withInstructionsContext(request.body, context),
  send: (upstream, target, body, options) => upstream.responses(target, body, options),
  replyOf: replyOfResponse,
  streamError: (code, message) => ({ type: "error", code, message, param: null })
}
