import { Predicate } from "effect"

/** The text of a chat message's content: a string, or the text parts of an array of parts. */
export const textOf = (content: unknown): string => {
  if (Predicate.isString(content)) return content
  if (!Array.isArray(content)) return ""
  return content
    .filter((part): part is Record<string, unknown> => Predicate.isObject(part) && part["type"] === "text")
    .map((part) => String(part["text"] ?? ""))
    .join("\n")
}
