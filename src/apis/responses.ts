import { Effect, Exit, Result, Schema } from "effect"
import { toAnthropicRequest } from "../anthropic/toAnthropicRequest.ts"
import {
  inputAsChatMessages,
  makeResponsesReader,
  ResponseObject,
  ResponsesRequest,
  responseReply,
  withInstructionsContext
} from "../openai/responses.ts"
import {
  chatCompletionAsResponse,
  makeResponsesEventWriter,
  responsesAsChatRequest
} from "../openai/responsesViaChat.ts"
import type { AssembledReply } from "../openai/StreamAssembler.ts"
import type { ApiAdapter } from "./ApiAdapter.ts"
import { describeIssue } from "./ChatRequest.ts"
import { toAnthropic } from "./messages.ts"

const decodeFields = Schema.decodeUnknownExit(ResponsesRequest)

const decodeResponse = Schema.decodeUnknownExit(Schema.fromJsonString(ResponseObject))

/** A non-streamed Responses answer as an assembled reply (none: not a response). */
const replyOfResponse = (body: Uint8Array): AssembledReply | undefined => {
  const response = decodeResponse(new TextDecoder().decode(body))
  if (Exit.isFailure(response)) return undefined
  const { text, toolCalls, finishReason } = responseReply(response.value)
  return { content: text, toolCalls, finishReason }
}

/** OpenAI's Responses API, `POST /v1/responses`: to OpenAI natively, to Anthropic through Chat Completions. */
export const responses: ApiAdapter = {
  api: "responses",
  path: "/v1/responses",
  errorFormat: "openai",
  nativeProvider: undefined,
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
  outbound: (request, provider) =>
    provider === "anthropic"
      ? Result.map(Result.flatMap(responsesAsChatRequest(request.body), toAnthropicRequest), (body) =>
          // A response's last event carries its usage: the Responses API always has it.
          toAnthropic(body, {
            includeUsage: true,
            encodeStream: makeResponsesEventWriter,
            encodeBody: chatCompletionAsResponse
          })
        )
      : Result.succeed({
          api: "responses",
          body: request.body,
          // After the operator's `instructions`.
          withContext: withInstructionsContext,
          send: (upstream, target, body, options) =>
            upstream.relay(target, "/responses", body, options, makeResponsesReader)
        }),
  replyOf: replyOfResponse,
  streamError: (code, message) => ({ type: "error", code, message, param: null })
}
