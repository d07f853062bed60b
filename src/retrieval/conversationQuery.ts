import { messageText } from "../domain/messageText.ts"
import type { ChatMessage } from "../providers/openai/chat.ts"

/**
 * What ranking looks for: the latest user message, and what came just before it with less weight,
 * so a follow-up that names nothing ("and what about her sister?", "ok, book it") is read in the
 * light of what the conversation is about.
 */
export interface ConversationQuery {
  readonly latest: string
  /** Earlier messages with their weights (below 1). */
  readonly earlier: ReadonlyArray<{ readonly text: string; readonly weight: number }>
}

/** The user's previous message counts half as much as the latest one… */
export const PREVIOUS_USER_WEIGHT = 0.5
/** …and the assistant's answer in between less (it is long, and about the last question). */
export const ASSISTANT_WEIGHT = 0.3
/** The start of an earlier message that is read (an answer's first lines say what it is about). */
const EARLIER_CHARACTERS = 600

export const singleQuery = (text: string): ConversationQuery => ({ latest: text, earlier: [] })

export const conversationQueryOf = (messages: ReadonlyArray<ChatMessage>): ConversationQuery => {
  let latest: number | undefined
  let assistant: string | undefined
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!
    if (message.role === "user") {
      if (latest === undefined) {
        latest = i
        continue
      }
      const earlier = [
        { text: messageText(message.content).slice(0, EARLIER_CHARACTERS), weight: PREVIOUS_USER_WEIGHT }
      ]
      if (assistant !== undefined) earlier.push({ text: assistant, weight: ASSISTANT_WEIGHT })
      return { latest: messageText(messages[latest]!.content), earlier }
    }
    if (message.role === "assistant" && latest !== undefined && assistant === undefined) {
      assistant = messageText(message.content).slice(0, EARLIER_CHARACTERS)
    }
  }
  if (latest === undefined) return singleQuery("")
  return {
    latest: messageText(messages[latest]!.content),
    earlier: assistant === undefined ? [] : [{ text: assistant, weight: ASSISTANT_WEIGHT }]
  }
}
