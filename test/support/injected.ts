import { Predicate } from "effect"
import { OPEN_TAG } from "../../src/injection/renderContext.ts"

/** The texts a value holds: a string, the `text` of content parts, the strings of a list. */
const textsOf = (value: unknown): Array<string> =>
  typeof value === "string"
    ? [value]
    : Array.isArray(value)
      ? value.flatMap(textsOf)
      : Predicate.isObject(value) && typeof value["text"] === "string"
        ? [value["text"]]
        : []

/**
 * The texts of a request the gateway sent upstream that hold its context block, wherever the placement
 * put them — a system or developer message, a message or input item of its own at the tail, Anthropic's
 * `system` or a user message, the Responses API's `instructions` — in the order they come.
 */
export const injectedTexts = (body: Readonly<Record<string, unknown>> | undefined): Array<string> => {
  if (body === undefined) return []
  const items = [
    ...textsOf(body["system"]),
    ...textsOf(body["instructions"]),
    ...[body["messages"], body["input"]].flatMap((list) =>
      Array.isArray(list) ? list.flatMap((item) => (Predicate.isObject(item) ? textsOf(item["content"]) : [])) : []
    )
  ]
  return items.filter((text) => text.includes(OPEN_TAG))
}

/** Everything the gateway injected into a request, as one text (`""`: nothing). */
export const injectedText = (body: Readonly<Record<string, unknown>> | undefined) => injectedTexts(body).join("\n")
