import { Effect, Exit, Predicate, Result, Schema } from "effect"
import type { ConversationShape } from "../injection/conversationTail.ts"
import { unsupported } from "../providers/errors.ts"
import {
  inputAsChatMessages,
  makeResponsesReader,
  ResponseObject,
  responseReply,
  withInstructionsContext
} from "../providers/openai/responses.ts"
import { chatCompletionAsResponse, makeResponsesEventWriter } from "../providers/openai/responsesFromChat.ts"
import { responsesAsChatRequest } from "../providers/openai/responsesViaChat.ts"
import type { AssembledReply } from "../providers/openai/StreamAssembler.ts"
import { providerOf } from "../providers/providers.ts"
import type { ApiAdapter } from "./ApiAdapter.ts"
import { describeIssue } from "./ChatRequest.ts"
import { OPENAI_USER_FIELDS } from "./chatCompletions.ts"
import { inputItems } from "./responsesState.ts"
import { ResponsesRequest } from "./ServiceOptions.ts"
import { translatedOutbound } from "./translated.ts"

const decodeFields = Schema.decodeUnknownExit(ResponsesRequest)

const decodeResponse = Schema.decodeUnknownExit(ResponseObject)

/** A non-streamed Responses answer as an assembled reply (none: not a response). */
const replyOfResponse = (json: unknown): AssembledReply | undefined => {
  const response = decodeResponse(json)
  // A background response answers at once, before any output: not an answer to record.
  if (Exit.isFailure(response) || response.value.status === "queued" || response.value.status === "in_progress")
    return undefined
  const { text, toolCalls, finishReason } = responseReply(response.value)
  return { answerId: response.value.id, content: text, toolCalls, finishReason }
}

/** Holds the whole answer object of a response the gateway keeps, once the answer has ended. */
const finalResponseCell = () => {
  let response: Readonly<Record<string, unknown>> | undefined
  return {
    set: <R extends Readonly<Record<string, unknown>> | undefined>(value: R): R => {
      response = value
      return value
    },
    get: () => response
  }
}

const decodeObject = Schema.decodeUnknownExit(Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown)))

/** A non-streamed answer's object (none: not JSON). */
const responseBody = (body: Uint8Array) => {
  const decoded = decodeObject(new TextDecoder().decode(body))
  return Exit.isSuccess(decoded) ? decoded.value : undefined
}

/** Items a model writes in a Responses conversation (an answer, a call) rather than is given (`…_output`). */
const isModelItem = (item: unknown) => {
  if (!Predicate.isObject(item)) return false
  const type = item["type"]
  if (item["role"] === "assistant") return true
  return typeof type === "string" && type !== "message" && !type.endsWith("_output") && type !== "item_reference"
}

/**
 * A Responses request's conversation: its input as items (a string is one user message, the same
 * prompt); a turn's context goes in a developer message of its own.
 */
const responsesConversation: ConversationShape = {
  items: (body) => inputItems(body["input"]),
  withItems: (body, items) => ({ ...body, input: items }),
  blockItem: (text) => ({ type: "message", role: "developer", content: text }),
  isAnswer: isModelItem
}

/** OpenAI's Responses API, `POST /v1/responses`: natively to a provider that serves it, else through Chat Completions. */
export const responses: ApiAdapter = {
  api: "responses",
  path: "/v1/responses",
  errorFormat: "openai",
  nativeProvider: undefined,
  userFields: OPENAI_USER_FIELDS,
  threads: false,
  responsesState: true,
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
  outbound: (request, provider) => {
    const kept = request.gatewayResponse?.kept
    const final = finalResponseCell()
    const { capabilities, chat } = providerOf(provider)
    if (!capabilities.responses) {
      if (chat === undefined)
        return unsupported("input", "This upstream serves neither the Responses API nor a translation")
      return Result.map(Result.flatMap(responsesAsChatRequest(request.body), chat.request), (body) => ({
        // A response's last event carries its usage: the Responses API always has it.
        ...translatedOutbound(chat, body, {
          includeUsage: true,
          encodeStream: (created) => makeResponsesEventWriter(created, kept, final.set),
          encodeBody: (completion) => final.set(chatCompletionAsResponse(completion, kept))
        }),
        finalResponse: final.get,
        // The client knows the response by the gateway's id (it keeps the state of a translated one).
        ...(kept === undefined ? {} : { answerId: kept.id })
      }))
    }
    return Result.succeed({
      api: "responses",
      // The gateway keeps the state: the provider is asked to keep nothing.
      body: kept === undefined ? request.body : { ...request.body, store: false },
      // After the operator's `instructions`.
      withContext: withInstructionsContext,
      conversation: responsesConversation,
      send: (upstream, target, body, options) =>
        upstream
          .relay(target, "/responses", body, options, () =>
            makeResponsesReader(kept === undefined ? undefined : final.set)
          )
          .pipe(
            Effect.map((reply) => {
              if (kept !== undefined && reply._tag === "Body") final.set(responseBody(reply.body))
              return reply
            })
          ),
      ...(kept === undefined ? {} : { finalResponse: final.get })
    })
  },
  replyOf: replyOfResponse,
  streamError: (code, message) => ({ type: "error", code, message, param: null })
}
