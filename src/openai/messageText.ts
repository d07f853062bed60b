import type { MessageContent } from "./chat.ts"

/**
 * The text of a message's content: a string, or its text parts joined by newlines. With
 * `nameOtherParts`, the other parts are named in their place (`[image_url]`), as the record keeps them.
 */
export const messageText = (
  content: MessageContent | undefined,
  options?: { readonly nameOtherParts: boolean }
): string => {
  if (typeof content === "string") return content
  if (content === null || content === undefined) return ""
  const named = options?.nameOtherParts === true
  return content
    .flatMap((part) => (part.type === "text" ? [part.text ?? ""] : named ? [`[${part.type}]`] : []))
    .filter((text) => !named || text !== "")
    .join("\n")
}
