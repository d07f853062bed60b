import { Effect, Predicate } from "effect"
import { textOf } from "../domain/messageContent.ts"
import type { MessageRole } from "../domain/Message.ts"
import { Background } from "../background/Background.ts"
import type { Profile, ProfileId } from "../domain/Profile.ts"
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

/** Whose turn it is: the profile, or (database unavailable) the user id to find or create it by later. */
export type TurnOwner =
  | { readonly _tag: "Known"; readonly profile: Profile }
  | { readonly _tag: "Deferred"; readonly userId: string; readonly findProfile: Effect.Effect<ProfileId, unknown> }

/**
 * Submits the new turn (as the `beforeRecord` plugins leave it) and, unless skipped, the extraction
 * job for it. Returns once the turn is accepted for writing; the `afterResponse` plugins see it
 * once it is written (in the background, and only for a turn whose profile was known).
 */
export const submitTurn = Effect.fnUntraced(function*(
  request: ChatRequest,
  owner: TurnOwner,
  requestId: string,
  reply: AssembledReply
) {
  const turnStore = yield* TurnStore
  const host = yield* PluginHost
  const background = yield* Background
  const assistant: TurnMessage = {
    role: "assistant",
    content: reply.content,
    toolCalls: reply.toolCalls.length > 0 ? reply.toolCalls : null,
    toolCallId: null
  }
  // What the database cannot hold (NUL, unpaired surrogates) is stored as U+FFFD; the provider got the original.
  const messages = (yield* host.beforeRecord([...newInputs(request.messages), assistant])).map(storableMessage)
  const model = storableText(request.model)
  const pending = yield* turnStore.submit({
    profileId: owner._tag === "Known" ? owner.profile.id : owner.findProfile,
    userId: owner._tag === "Known" ? owner.profile.externalId : owner.userId,
    requestId,
    model,
    messages: messages.map((message) => ({ ...message, role: message.role as MessageRole })),
    extract: !request.skipExtraction,
    requestTraits: request.requestTraits
  })
  if (owner._tag === "Known") {
    yield* background.run(
      "after-response",
      Effect.andThen(pending.written, host.afterResponse({ profile: owner.profile, requestId, model, messages }))
    )
  }
  return pending
})
