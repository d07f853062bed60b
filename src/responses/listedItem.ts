import { createHash } from "node:crypto"
import { Predicate } from "effect"

/**
 * Items as OpenAI's list endpoints show them (`GET /v1/responses/{id}/input_items`, a conversation's
 * items), from the items as the gateway keeps them: as they were sent, so the provider gets the same
 * bytes again. Only the showing changes an item, never what is kept.
 */

export type ListedItem = Readonly<Record<string, unknown>> & { readonly id: string }

/** The prefix of an item id OpenAI gives an item of this type: `msg_`, `fc_`, else `item_`. */
export const itemIdPrefix = (type: unknown) => (type === "message" ? "msg" : type === "function_call" ? "fc" : "item")

/** An item's own id, if it has one (a non-empty string). */
export const ownItemId = (item: unknown): string | undefined => {
  const id = Predicate.isObject(item) ? item["id"] : undefined
  return typeof id === "string" && id !== "" ? id : undefined
}

/**
 * The id of a kept response's input item that came without one: named like OpenAI's (`msg_` and 48 hex
 * digits), the same on every read (pages go on after it), and no other item's.
 */
export const inputItemId = (responseId: string, index: number, item: unknown) =>
  `${itemIdPrefix(Predicate.isObject(item) ? (item["type"] ?? "message") : "message")}_${createHash("sha256")
    .update(`${responseId}\u0000input\u0000${index}`)
    .digest("hex")
    .slice(0, 48)}`

/** The items OpenAI lists with a `status` (always there once an item is kept: `completed`). */
const WITH_STATUS = new Set(["message", "function_call", "function_call_output"])

/**
 * A message's text as OpenAI lists it: a part, `output_text` (with its `annotations`) for the model's,
 * `input_text` for everyone else's. Parts are shown as they were sent.
 */
const contentParts = (role: unknown, content: unknown) =>
  typeof content !== "string"
    ? content
    : [
        role === "assistant"
          ? { type: "output_text", text: content, annotations: [] }
          : { type: "input_text", text: content }
      ]

/**
 * An item as OpenAI lists it: with its id and its type (a message sent without one is a `message`); a
 * message's text (`content: "…"`, as a client may send it) as a text part; `status: "completed"` on
 * messages, function calls and their outputs that have none.
 */
export const listedItem = (item: unknown, id: string): ListedItem => {
  const fields: Readonly<Record<string, unknown>> = Predicate.isObject(item) ? item : {}
  const type = fields["type"] ?? "message"
  return {
    ...fields,
    id,
    type,
    ...(typeof type === "string" && WITH_STATUS.has(type) ? { status: fields["status"] ?? "completed" } : {}),
    ...(type === "message" && "content" in fields ? { content: contentParts(fields["role"], fields["content"]) } : {})
  }
}
