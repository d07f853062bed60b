import { Effect, Predicate } from "effect"
import { textOf } from "../domain/messageContent.ts"
import type { MessageRole } from "../domain/Message.ts"
import type { Profile } from "../domain/Profile.ts"
import { storableMessage, storableText } from "../domain/storableText.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { type TurnMessage, TurnStore } from "../store/TurnStore.ts"
import type { ChatMessage, ChatRequest } from "./ChatRequest.ts"
import type { AssembledReply } from "./StreamAssembler.ts"

/** Text of a message for the record: text parts kept, other parts named (`[image_url]`). */
const flatten = (content: unknown): string => {
  if (!Array.isArray(content)) return textOf(content)
  return content
    .map((part) =>
      Predicate.isObject(part)
        ? part["type"] === "text" ? String(part["text"] ?? "") : `[${String(part["type"] ?? "part")}]`
        : ""
    )
    .filter((text) => text !== "")
    .join("\n")
}

/**
 * What is new in this request: the user (and tool) messages after the last assistant message.
 * Earlier history was recorded with its own turn; system prompts belong to the operator.
 */
export const newInputs = (messages: ReadonlyArray<ChatMessage>): ReadonlyArray<TurnMessage> => {
  let start = 0
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "assistant") {
      start = i + 1
      break
    }
  }
  return messages.slice(start)
    .filter((message) => message.role === "user" || message.role === "tool")
    .map((message) => ({
      role: message.role as MessageRole,
      content: flatten(message["content"]),
      toolCalls: null,
      toolCallId: Predicate.isString(message["tool_call_id"]) ? message["tool_call_id"] : null
    }))
}

/** The first choice of a non-streamed completion as an assembled reply. */
export const replyOfCompletion = (body: Uint8Array): AssembledReply | undefined => {
  let json: unknown
  try {
    json = JSON.parse(new TextDecoder().decode(body))
  } catch {
    return undefined
  }
  const choices = Predicate.isObject(json) && Array.isArray(json["choices"]) ? json["choices"] : []
  const first = choices.find((choice) => Predicate.isObject(choice) && (choice["index"] ?? 0) === 0)
  if (!Predicate.isObject(first) || !Predicate.isObject(first["message"])) return undefined
  const message = first["message"]
  return {
    content: textOf(message["content"]) || (Predicate.isString(message["refusal"]) ? message["refusal"] : ""),
    toolCalls: Array.isArray(message["tool_calls"]) ? message["tool_calls"] : [],
    finishReason: Predicate.isString(first["finish_reason"]) ? first["finish_reason"] : null
  }
}

/**
 * Stores the new turn (as the `beforeRecord` plugins leave it) and, unless skipped, the extraction
 * job for it; then lets the `afterResponse` plugins see it.
 */
export const recordTurn = Effect.fnUntraced(function*(
  request: ChatRequest,
  profile: Profile,
  requestId: string,
  reply: AssembledReply
) {
  const turnStore = yield* TurnStore
  const host = yield* PluginHost
  const assistant: TurnMessage = {
    role: "assistant",
    content: reply.content,
    toolCalls: reply.toolCalls.length > 0 ? reply.toolCalls : null,
    toolCallId: null
  }
  // What the database cannot hold (NUL, unpaired surrogates) is stored as U+FFFD; the provider got the original.
  const messages = (yield* host.beforeRecord([...newInputs(request.messages), assistant])).map(storableMessage)
  const model = storableText(request.model)
  yield* turnStore.record({
    profileId: profile.id,
    requestId,
    model,
    messages: messages.map((message) => ({ ...message, role: message.role as MessageRole })),
    extract: !request.skipExtraction,
    requestTraits: request.requestTraits
  })
  yield* host.afterResponse({ profile, requestId, model, messages })
})
