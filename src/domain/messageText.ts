/** A message's content as every API the gateway reads carries it: a string, or parts (text and other kinds). */
export type TextContent = string | ReadonlyArray<{ readonly type: string; readonly text?: string | undefined }> | null

/**
 * The text of a message's content: a string, or its text parts joined by newlines. With
 * `nameOtherParts`, the other parts are named in their place (`[image_url]`), as the record keeps them.
 */
export const messageText = (
  content: TextContent | undefined,
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
