import { Predicate, Schema } from "effect"

/**
 * Text PostgreSQL can hold: no NUL (`text` and `jsonb` refuse it) and no unpaired surrogate (it has
 * no UTF-8 form: the driver silently turns it into U+FFFD in `text`, and `jsonb` refuses its escape).
 */
export const isStorableText = (text: string): boolean => text.isWellFormed() && !text.includes("\u0000")

/** The text with every NUL and unpaired surrogate replaced by U+FFFD, one for one (same length). */
export const storableText = (text: string): string =>
  isStorableText(text) ? text : text.toWellFormed().replaceAll("\u0000", "\ufffd")

/** Every string of a JSON value, object keys included, is storable. Iterative: depth cannot overflow the stack. */
export const isStorableJson = (value: unknown): boolean => {
  const pending: Array<unknown> = [value]
  while (pending.length > 0) {
    const current = pending.pop()
    if (Predicate.isString(current)) {
      if (!isStorableText(current)) return false
    } else if (Array.isArray(current)) {
      pending.push(...current)
    } else if (Predicate.isObject(current)) {
      for (const [key, inner] of Object.entries(current)) {
        if (!isStorableText(key)) return false
        pending.push(inner)
      }
    }
  }
  return true
}

/** A JSON value with `storableText` applied to every string and object key (a copy; storable values are returned as they are). */
export const storableJson = (value: unknown): unknown => {
  if (isStorableJson(value)) return value
  if (Predicate.isString(value)) return storableText(value)
  if (Array.isArray(value)) return value.map(storableJson)
  if (Predicate.isObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [storableText(key), storableJson(inner)]))
  }
  return value
}

/** A message about to be recorded, with its text, tool call id and tool calls made storable. */
export const storableMessage = <
  M extends { readonly content: string; readonly toolCallId: string | null; readonly toolCalls: unknown }
>(
  message: M
): M => ({
  ...message,
  content: storableText(message.content),
  toolCallId: message.toolCallId === null ? null : storableText(message.toolCallId),
  toolCalls: storableJson(message.toolCalls)
})

const STORABLE = "text without NUL characters or unpaired surrogates"

/** A string check for every text a request may store. */
export const isStorable = Schema.makeFilter(isStorableText, { expected: STORABLE })

/** A JSON-value check: every string and key in it is storable. */
export const isStorableJsonValue = Schema.makeFilter(isStorableJson, {
  expected: `a JSON value whose strings are ${STORABLE}`
})

/** A string a request may store. */
export const StorableString = Schema.String.check(isStorable)

/**
 * A value's JSON text, storable, with its keys in the order they came: bound as text and cast to
 * `json` (`sql.json` binds jsonb, which reorders keys), it is kept byte for byte as it will be sent again.
 */
export const asSent = (value: unknown): string => JSON.stringify(storableJson(value))
