import { isStorableText } from "../domain/storableText.ts"

/** The longest id the gateway keeps for a response, a conversation or an item (the database's bound). */
export const MAX_STATE_ID_LENGTH = 200

const CONTROL = /\p{Cc}/u

/**
 * Why an id of the state the gateway keeps (a response, a conversation, an item: in a path or a body)
 * is refused, or `undefined` when it is fine: 1–200 characters (counted as the database counts them),
 * without control characters or text PostgreSQL cannot hold (NUL, unpaired surrogates).
 */
export const stateIdProblem = (id: string): string | undefined => {
  if (id === "") return "must not be empty"
  if (!isStorableText(id) || CONTROL.test(id)) return "must not contain control characters or unpaired surrogates"
  let length = 0
  for (const _ of id) length++
  return length > MAX_STATE_ID_LENGTH ? `must be at most ${MAX_STATE_ID_LENGTH} characters` : undefined
}

/**
 * Why an item's own id is refused, or `undefined` when it is fine or absent (missing, `null` or `""`:
 * the gateway gives the item one).
 */
export const itemIdProblem = (id: unknown): string | undefined => {
  if (id === undefined || id === null || id === "") return undefined
  return typeof id === "string" ? stateIdProblem(id) : "must be a string"
}
