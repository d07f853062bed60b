import { Exit, Predicate, Schema } from "effect"
import { ErrorBody } from "../providers/openai/errorBody.ts"

/** The most of a provider's error body the gateway reads; the rest is never downloaded. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024

/** Longest message taken from an error body that is not JSON. */
const MAX_TEXT_MESSAGE = 500

export interface ErrorDetail {
  readonly message: string | null
  readonly type: string | null
  readonly code: string | null
  readonly param: string | null
}

const decodeErrorBody = Schema.decodeUnknownExit(Schema.fromJsonString(ErrorBody))

const jsonString = (raw: string): string | undefined => {
  try {
    const value: unknown = JSON.parse(`"${raw}"`)
    return Predicate.isString(value) ? value : undefined
  } catch {
    return undefined
  }
}

/**
 * A string field of JSON text that was cut short: `"name": "…` up to its closing quote or the end
 * of the text, with an escape the cut split dropped.
 */
const salvageField = (text: string, name: string): string | null => {
  const match = new RegExp(`"${name}"\\s*:\\s*"((?:[^"\\\\]|\\\\.)*)`).exec(text)
  if (match === null) return null
  const raw = match[1]!
  // A cut escape (`\`, `\u00`) makes the text unreadable: drop up to its six characters.
  for (let cut = 0; cut <= 6 && cut <= raw.length; cut++) {
    const value = jsonString(raw.slice(0, raw.length - cut))
    if (value !== undefined) return value
  }
  return null
}

/**
 * The message of an OpenAI (`{error: {...}}`) or Anthropic (`{type: "error", error: {...}}`) error
 * body, or of its text. A body cut at `MAX_ERROR_BODY_BYTES` still gives what it holds.
 */
export const errorDetail = (text: string, truncated: boolean): ErrorDetail => {
  const body = decodeErrorBody(text)
  if (Exit.isSuccess(body)) {
    const { error } = body.value
    if (typeof error === "string") return { message: error, type: null, code: null, param: null }
    return {
      message: error.message ?? null,
      type: error.type ?? null,
      code: error.code === undefined || error.code === null ? null : String(error.code),
      param: error.param ?? null
    }
  }
  // Not JSON, not an error body, or cut short.
  const note = truncated ? ` (error body cut at ${MAX_ERROR_BODY_BYTES / 1024} KB)` : ""
  const message = truncated ? salvageField(text, "message") : null
  if (message !== null) {
    return {
      message: `${message}…${note}`,
      type: salvageField(text, "type"),
      code: salvageField(text, "code"),
      param: null
    }
  }
  const trimmed = text.trim().slice(0, MAX_TEXT_MESSAGE).toWellFormed()
  return { message: trimmed === "" ? null : `${trimmed}${note}`, type: null, code: null, param: null }
}
