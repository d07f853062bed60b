import type { ChatMessage, MessageContent } from "../providers/openai/chat.ts"

const isInstructionRole = (role: string) => role === "system" || role === "developer"

/**
 * Puts the context block after the operator's own instructions: appended to the first system (or
 * developer) message, or as a new leading system message when there is none. Nothing else changes.
 */
export const injectContext = (messages: ReadonlyArray<ChatMessage>, block: string): ReadonlyArray<ChatMessage> => {
  const index = messages.findIndex((message) => isInstructionRole(message.role))
  if (index === -1) return [{ role: "system", content: block }, ...messages]
  const content = messages[index]!.content
  const injected: MessageContent =
    typeof content === "string"
      ? content === ""
        ? block
        : `${content}\n\n${block}`
      : Array.isArray(content)
        ? [...content, { type: "text", text: block }]
        : block
  return messages.map((message, i) => (i === index ? { ...message, content: injected } : message))
}
