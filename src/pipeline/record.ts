import { Cause, Effect } from "effect"
import type { ChatMessage, ChatRequest } from "../apis/ChatRequest.ts"
import { Background } from "../background/Background.ts"
import type { MessageRole } from "../domain/Message.ts"
import { messageText } from "../domain/messageText.ts"
import type { Profile } from "../domain/Profile.ts"
import { storableMessage, storableText } from "../domain/storableText.ts"
import { holdAttachments } from "../extraction/attachmentPolicy.ts"
import { ExtractionConfig } from "../extraction/ExtractionConfig.ts"
import { CurrentKey } from "../keys/CurrentKey.ts"
import { requestStage } from "../observability/requestSpan.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { type MediaPart, mediaOfContent } from "../providers/openai/mediaParts.ts"
import type { AssembledReply } from "../providers/openai/StreamAssembler.ts"
import { type TurnMessage, TurnsRepo, type TurnTail } from "../turns/TurnsRepo.ts"

/**
 * What is new in this request: the user (and tool) messages after the last assistant message, each
 * with the images and files of a user message. Earlier history was recorded with its own turn;
 * system prompts belong to the operator.
 */
export const newInputs = (
  messages: ReadonlyArray<ChatMessage>
): ReadonlyArray<{ readonly message: TurnMessage; readonly media: ReadonlyArray<MediaPart> }> => {
  let start = 0
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "assistant") {
      start = i + 1
      break
    }
  }
  return messages
    .slice(start)
    .filter((message) => message.role === "user" || message.role === "tool")
    .map((message) => ({
      message: {
        role: message.role as MessageRole,
        // The media stay named in the text (`[image_url]`): what thread restore compares a history with.
        content: messageText(message.content, { nameOtherParts: true }),
        toolCalls: null,
        toolCallId: message.tool_call_id ?? null
      },
      media: message.role === "user" ? mediaOfContent(message.content) : []
    }))
}

/**
 * Whose turn it is: the user, and their profile unless the database was unavailable when the
 * request came (the turn writer then finds or creates it by the user id).
 */
export interface TurnOwner {
  /** The namespace the request acts in (the profile's, when it is known). */
  readonly namespace: string
  readonly userId: string
  readonly profile: Profile | undefined
  /** The key bound to a provider key that made the request (`boundKeyId`): the turn's extraction goes with it. */
  readonly keyId?: string | undefined
  /** The turn's tail (`INJECTION_PLACEMENT=latest`), kept with its answer for the next turn. */
  readonly tail?: TurnTail | undefined
}

/**
 * The id of the request's key when it is bound to a provider key, read in the request (a stream's
 * turn is recorded after the handler returned, where `CurrentKey` is no longer set).
 */
export const boundKeyId = Effect.map(CurrentKey, (key) => (key?.upstream === undefined ? undefined : key.id))

/**
 * Stage 6: the turn, recorded before the answer ends. Submits it and waits until it is written,
 * within `DATABASE_REQUEST_TIMEOUT_MS` and unless the database is unavailable: past that the turn
 * waits in the writer's memory, the answer goes on and the database is probed. A turn that cannot
 * be recorded never fails the answer.
 */
export const makeRecord = Effect.gen(function* () {
  const turnStore = yield* TurnsRepo
  const host = yield* PluginHost
  const background = yield* Background
  const extraction = yield* ExtractionConfig

  /**
   * Submits the new turn (as the `beforeRecord` plugins leave it) and, unless skipped, the extraction
   * job for it. Returns once the turn is accepted for writing; the `afterResponse` plugins see it
   * once it is written (in the background, and only for a turn whose profile was known).
   */
  const submitTurn = Effect.fnUntraced(function* (
    request: ChatRequest,
    owner: TurnOwner,
    requestId: string,
    reply: AssembledReply,
    incomplete: boolean
  ) {
    const assistant: TurnMessage = {
      role: "assistant",
      content: reply.content,
      toolCalls: reply.toolCalls.length > 0 ? reply.toolCalls : null,
      toolCallId: null,
      answerId: reply.answerId === undefined ? null : storableText(reply.answerId.slice(0, 200))
    }
    const inputs = newInputs(request.messages)
    const given = [...inputs.map((input) => input.message), assistant]
    // What the database cannot hold (NUL, unpaired surrogates) is stored as U+FFFD; the provider got the original.
    const messages = (yield* host.beforeRecord(given)).map(storableMessage)
    // Held only for a turn to be extracted, and only what the extraction model takes (EXTRACTION_MODALITIES).
    const attachments = holdAttachments(
      inputs.map((input) => input.media),
      !request.skipExtraction,
      extraction
    )
    // The plugins see text: a message's media stay with it when they leave the messages as they were
    // (text rewritten, none added, dropped or moved); otherwise the plugin decided what is recorded.
    const sameMessages =
      messages.length === given.length && messages.every((message, i) => message.role === given[i]!.role)
    if (!sameMessages && attachments.some((list) => list.length > 0))
      yield* Effect.logDebug("beforeRecord changed the turn's messages: its images and files are not recorded")
    const model = storableText(request.model)
    const pending = yield* turnStore.submit({
      profileId: owner.profile?.id,
      userId: owner.profile?.externalId ?? owner.userId,
      namespace: owner.namespace,
      requestId,
      model,
      threadId: request.threadId,
      messages: messages.map((message, i) => ({
        ...message,
        role: message.role as MessageRole,
        ...(sameMessages && (attachments[i]?.length ?? 0) > 0 ? { attachments: attachments[i] } : {})
      })),
      extract: !request.skipExtraction,
      requestTraits: request.requestTraits,
      keyId: owner.keyId,
      tail: owner.tail,
      incomplete
    })
    const profile = owner.profile
    if (profile !== undefined && host.observesTurns && !incomplete) {
      yield* background.run(
        "after-response",
        Effect.andThen(pending.written, host.afterResponse({ profile, requestId, model, messages }))
      )
    }
    return pending
  })

  return Effect.fnUntraced(function* (
    request: ChatRequest,
    owner: TurnOwner,
    requestId: string,
    reply: AssembledReply,
    /** The answer broke off after it started: stored as far as it went, outside its thread, never extracted. */
    incomplete = false
  ) {
    const turn = incomplete
      ? submitTurn(
          { ...request, threadId: undefined, skipExtraction: true },
          { ...owner, tail: undefined },
          requestId,
          reply,
          true
        )
      : submitTurn(request, owner, requestId, reply, false)
    yield* turn.pipe(
      Effect.flatMap((pending) => pending.settled),
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause) ? Effect.interrupt : Effect.logError("turn not recorded", cause)
      )
    )
  }, requestStage("pipeline.record"))
})
