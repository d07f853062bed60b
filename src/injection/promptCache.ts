import { createHash } from "node:crypto"
import { Predicate } from "effect"

/**
 * What the gateway does for a provider's prompt cache beyond where it puts the context
 * (`INJECTION_CACHE_CONTROL`, `INJECTION_PROMPT_CACHE_KEY`). Both leave a request that already says
 * how it wants to be cached as it is.
 */

/** Anthropic's cache breakpoint marker, as its Messages API reads it. */
const EPHEMERAL = { type: "ephemeral" }

const hasMarker = (value: unknown): boolean =>
  Array.isArray(value)
    ? value.some(hasMarker)
    : Predicate.isObject(value) && (value["cache_control"] != null || hasMarker(value["content"]))

/** Whether an Anthropic request carries a `cache_control` breakpoint of its own (tools, system or messages). */
export const hasCacheBreakpoint = (body: Readonly<Record<string, unknown>>) =>
  hasMarker(body["tools"]) || hasMarker(body["system"]) || hasMarker(body["messages"])

/** A message with `cache_control` on its last content block (a string content becomes one text block). */
const markedMessage = (message: unknown): unknown => {
  if (!Predicate.isObject(message)) return message
  const content = message["content"]
  if (typeof content === "string")
    return { ...message, content: [{ type: "text", text: content, cache_control: EPHEMERAL }] }
  if (!Array.isArray(content) || content.length === 0) return message
  const last = content.at(-1)
  if (!Predicate.isObject(last)) return message
  return { ...message, content: [...content.slice(0, -1), { ...last, cache_control: EPHEMERAL }] }
}

/**
 * An Anthropic request with one breakpoint at the end of its repeating prefix — on the message at
 * `index`, the last before the turn's new context — unless it has breakpoints of its own (which are
 * never moved, so the four Anthropic allows are the app's). Anthropic then caches everything up to
 * there, and the next turn reads it back.
 */
export const withCacheBreakpoint = (
  body: Readonly<Record<string, unknown>>,
  index: number
): Readonly<Record<string, unknown>> => {
  const messages = body["messages"]
  if (!Array.isArray(messages) || index < 0 || index >= messages.length || hasCacheBreakpoint(body)) return body
  return { ...body, messages: messages.map((message, i) => (i === index ? markedMessage(message) : message)) }
}

/** The `prompt_cache_key` of a user: a hash (the provider never learns the user id), the same on every replica. */
export const promptCacheKeyOf = (namespace: string, userId: string) =>
  `pmg-${createHash("sha256").update(`${namespace}\u0000${userId}`).digest("hex").slice(0, 32)}`

/** An OpenAI request with the user's `prompt_cache_key`, unless it names one itself. */
export const withPromptCacheKey = (body: Readonly<Record<string, unknown>>, key: string) =>
  body["prompt_cache_key"] === undefined ? { ...body, prompt_cache_key: key } : body
