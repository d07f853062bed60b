import { Effect, Exit, Predicate, Result, Schema } from "effect"
import { messageText } from "../domain/messageText.ts"
import type { ConversationShape } from "../injection/conversationTail.ts"
import { injectContext } from "../injection/injectContext.ts"
import { ChatCompletion, type ChatMessage } from "../providers/openai/chat.ts"
import type { AssembledReply } from "../providers/openai/StreamAssembler.ts"
import { encodeEvents, makeChunkReader } from "../providers/openai/stream.ts"
import { providerOf } from "../providers/providers.ts"
import type { ApiAdapter } from "./ApiAdapter.ts"
import { describeIssue } from "./ChatRequest.ts"
import { ChatCompletionRequest } from "./ServiceOptions.ts"
import { translatedOutbound } from "./translated.ts"

const decodeFields = Schema.decodeUnknownExit(ChatCompletionRequest)

/** Only what the record keeps of an answer: the choices (the rest of the body is not read). */
const decodeCompletion = Schema.decodeUnknownExit(
  Schema.Struct({ id: ChatCompletion.fields.id, choices: ChatCompletion.fields.choices })
)

/** The first choice of a non-streamed completion as an assembled reply (none: not a completion). */
const replyOfCompletion = (json: unknown): AssembledReply | undefined => {
  const completion = decodeCompletion(json)
  if (Exit.isFailure(completion)) return undefined
  const first = completion.value.choices.find((choice) => (choice.index ?? 0) === 0)
  if (first === undefined) return undefined
  const { message } = first
  return {
    answerId: completion.value.id,
    content: messageText(message.content) || (message.refusal ?? ""),
    toolCalls: message.tool_calls ?? [],
    finishReason: first.finish_reason ?? null
  }
}

/** A chat request's conversation: its messages; a turn's context goes in a system message of its own. */
const chatConversation: ConversationShape = {
  items: (body) => (Array.isArray(body["messages"]) ? body["messages"] : []),
  withItems: (body, items) => ({ ...body, messages: items }),
  blockItem: (text) => ({ role: "system", content: text }),
  isAnswer: (item) => Predicate.isObject(item) && item["role"] === "assistant"
}

/**
 * A stream that did not ask for its usage, asking for it (with the client's other `stream_options`):
 * the gateway counts every answer's tokens, and a chat stream carries them only when asked. None: a
 * whole answer (it always has its usage), or a stream whose client asked.
 */
const askingForUsage = (body: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> | undefined => {
  const options = body["stream_options"]
  if (body["stream"] !== true || (Predicate.isObject(options) && options["include_usage"] === true)) return undefined
  return { ...body, stream_options: { ...(Predicate.isObject(options) ? options : {}), include_usage: true } }
}

/** The stream the client would have got without the usage the gateway asked for (`askingForUsage`). */
const readHidingUsage = () => makeChunkReader({ hideUsage: true })

/** The body fields that name the user in OpenAI's APIs. */
export const OPENAI_USER_FIELDS = "`safety_identifier`, `user` or `metadata.profile_id`"

/** OpenAI Chat Completions, `POST /v1/chat/completions`: as it is to a provider that speaks it, else translated. */
export const chatCompletions: ApiAdapter = {
  api: "chat.completions",
  path: "/v1/chat/completions",
  errorFormat: "openai",
  nativeProvider: undefined,
  userFields: OPENAI_USER_FIELDS,
  threads: true,
  responsesState: false,
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
  outbound: (request, provider) => {
    const { chat } = providerOf(provider)
    return chat === undefined
      ? Result.succeed({
          api: "chat.completions",
          body: request.body,
          // After the caller's first system message.
          withContext: (body, context) => ({
            ...body,
            messages: injectContext(body["messages"] as ReadonlyArray<ChatMessage>, context)
          }),
          conversation: chatConversation,
          send: (upstream, target, body, options) => {
            const asking = upstream.asksStreamUsage ? askingForUsage(body) : undefined
            return asking === undefined
              ? upstream.relay(target, "/chat/completions", body, options, makeChunkReader)
              : upstream.relay(target, "/chat/completions", asking, options, readHidingUsage)
          }
        })
      : Result.map(chat.request(request.body), (body) =>
          translatedOutbound(chat, body, {
            includeUsage: request.includeUsage,
            encodeStream: () => encodeEvents,
            encodeBody: (completion) => completion
          })
        )
  },
  replyOf: replyOfCompletion,
  streamError: (code, message) => ({
    error: { message, type: code === "server_shutting_down" ? "server_error" : "upstream_error", code, param: null }
  })
}
