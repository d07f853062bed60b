import { estimateTokens } from "../injection/renderContext.ts"
import type { ChatMessage, ToolCall } from "../openai/chat.ts"
import { messageText } from "../openai/messageText.ts"

/** A message of a thread as it was recorded. */
export interface ThreadMessage {
  readonly role: string
  readonly content: string
  readonly toolCalls: ReadonlyArray<ToolCall> | null
  readonly toolCallId: string | null
}

/** What a request gets back of its thread, and what the receipt says of it. */
export interface Restoration {
  /** The earlier messages to put before the request's own (after its system messages), oldest first. */
  readonly messages: ReadonlyArray<ChatMessage>
  /** Messages of the client's own history found at the end of the thread (not restored again). */
  readonly matched: number
  /** Earlier messages left out for the budget. */
  readonly omitted: number
  /** The client sent a history the thread does not end with: nothing is restored. */
  readonly historyDiffers: boolean
}

/** A message's rough cost in tokens: its text and a few for its role and framing. */
const cost = (message: ThreadMessage) =>
  estimateTokens(message.content) +
  4 +
  (message.toolCalls === null ? 0 : estimateTokens(JSON.stringify(message.toolCalls)))

const asChatMessage = (message: ThreadMessage): ChatMessage =>
  message.role === "tool"
    ? { role: "tool", content: message.content, tool_call_id: message.toolCallId }
    : message.toolCalls !== null && message.toolCalls.length > 0
      ? { role: message.role, content: message.content === "" ? null : message.content, tool_calls: message.toolCalls }
      : { role: message.role, content: message.content }

const isConversational = (message: ChatMessage) => message.role !== "system" && message.role !== "developer"

/** The client's own history: its messages up to the last assistant one, without the system prompt. */
const clientHistory = (messages: ReadonlyArray<ChatMessage>): ReadonlyArray<ChatMessage> => {
  let last = -1
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "assistant") {
      last = i
      break
    }
  }
  return messages.slice(0, last + 1).filter(isConversational)
}

const sameMessage = (stored: ThreadMessage, sent: ChatMessage) =>
  stored.role === sent.role && stored.content === messageText(sent.content, { nameOtherParts: true })

/**
 * What of its thread (`stored`, oldest first) a request gets back: the most recent messages within
 * `maxTokens`, whole turns only (it starts at a user message). A client that sent some history of its
 * own is matched against the end of the thread: only what comes before it is restored, so nothing is
 * there twice; a history the thread does not end with (edited, or another conversation) gets nothing.
 */
export const restoreThread = (
  stored: ReadonlyArray<ThreadMessage>,
  request: ReadonlyArray<ChatMessage>,
  maxTokens: number
): Restoration => {
  if (stored.length === 0) return { messages: [], matched: 0, omitted: 0, historyDiffers: false }
  const history = clientHistory(request)
  const tail = stored.slice(stored.length - history.length)
  const matches = history.length <= stored.length && history.every((sent, i) => sameMessage(tail[i]!, sent))
  if (!matches) return { messages: [], matched: 0, omitted: stored.length, historyDiffers: true }
  const candidates = stored.slice(0, stored.length - history.length)
  let start = candidates.length
  let spent = 0
  while (start > 0 && spent + cost(candidates[start - 1]!) <= maxTokens) {
    spent += cost(candidates[start - 1]!)
    start--
  }
  // Whole turns: never an answer, or a tool's result, without what it answers.
  while (start < candidates.length && candidates[start]!.role !== "user") start++
  return {
    messages: candidates.slice(start).map(asChatMessage),
    matched: history.length,
    omitted: start,
    historyDiffers: false
  }
}

/** The request's messages with the restored ones after its leading system messages. */
export const withRestored = (
  messages: ReadonlyArray<unknown>,
  restored: ReadonlyArray<ChatMessage>
): ReadonlyArray<unknown> => {
  let lead = 0
  while (lead < messages.length && !isConversational(messages[lead] as ChatMessage)) lead++
  return [...messages.slice(0, lead), ...restored, ...messages.slice(lead)]
}
