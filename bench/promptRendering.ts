/**
 * The prompt as the provider renders it, for `bench/promptCache.ts`. A provider caches tokens of the
 * conversation it renders, not bytes of the JSON it was sent: key order, whitespace, ids and the form
 * a message takes (a string, text parts, a Responses `input` string) do not change the prompt. So a
 * request is rendered as the ordered list of its parts, each `<|role|>\n<content>\n`:
 *   Chat Completions    tools (one line per tool, canonical JSON), then each message: its role and its content
 *   Responses           tools, `instructions` as a system part, then each input item (a string input is one
 *                       user message); a message item is its role and content, another item (a function
 *                       call, …) its type and canonical JSON; ids and statuses are left out
 *   Anthropic Messages  tools, `system`, then each message (consecutive messages of one role stay separate
 *                       parts: Anthropic merges them, which does not move a prefix)
 * Content: a string as it is; parts one per line, a text part (`text`, `input_text`, `output_text`) as its
 * text, any other part as canonical JSON (sorted keys); fields of a message besides its role and content
 * (tool calls, a tool call's id) follow as canonical JSON. `cache_control` is a marker, not prompt: it is
 * left out of the text and kept as a breakpoint offset.
 */
import { CLOSE_TAG, OPEN_TAG, PREFACE } from "../src/injection/renderContext.ts"

export type Api = "chat" | "responses" | "messages"

export interface RenderedPrompt {
  readonly text: string
  /** Where each part starts and ends in `text` (its role line and trailing newline included). */
  readonly parts: ReadonlyArray<{ readonly start: number; readonly end: number }>
  /** The end (in `text`) of the last block carrying `cache_control`; 0 when none does. */
  readonly breakpointEnd: number
}

type Json = Readonly<Record<string, unknown>>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

/** JSON with sorted keys at every depth: the same value renders the same whatever its key order. */
export const canonicalJson = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonicalJson).join(",")}]`
    : isObject(value)
      ? `{${Object.keys(value)
          .filter((key) => value[key] !== undefined)
          .sort()
          .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`)
          .join(",")}}`
      : JSON.stringify(value)

const without = (value: Json, keys: ReadonlyArray<string>): Json =>
  Object.fromEntries(Object.entries(value).filter(([key]) => !keys.includes(key)))

const TEXT_PARTS = new Set(["text", "input_text", "output_text"])

/** One content block's text, and whether it carries a breakpoint. */
const blockText = (block: unknown): { readonly text: string; readonly breakpoint: boolean } => {
  if (!isObject(block)) return { text: canonicalJson(block), breakpoint: false }
  const breakpoint = block["cache_control"] !== undefined && block["cache_control"] !== null
  const text =
    typeof block["type"] === "string" && TEXT_PARTS.has(block["type"]) && typeof block["text"] === "string"
      ? block["text"]
      : canonicalJson(without(block, ["cache_control"]))
  return { text, breakpoint }
}

/** Builds the rendering part by part, keeping the offsets of parts and breakpoints. */
const renderer = () => {
  let text = ""
  let breakpointEnd = 0
  const parts: Array<{ start: number; end: number }> = []
  return {
    /** A part: its role line, then its blocks one per line (a string is one block), then `extra` lines. */
    part: (role: string, content: unknown, extra?: Json) => {
      const start = text.length
      text += `<|${role}|>\n`
      const blocks = content === undefined || content === null ? [] : Array.isArray(content) ? content : [content]
      blocks.forEach((block, index) => {
        if (index > 0) text += "\n"
        const rendered = typeof block === "string" ? { text: block, breakpoint: false } : blockText(block)
        text += rendered.text
        if (rendered.breakpoint) breakpointEnd = text.length
      })
      if (extra !== undefined && Object.keys(extra).length > 0) text += `\n${canonicalJson(extra)}`
      text += "\n"
      parts.push({ start, end: text.length })
    },
    done: (): RenderedPrompt => ({ text, parts, breakpointEnd })
  }
}

const asArray = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

/** The tools part: one tool a line, first (every provider puts them before the conversation). */
const renderTools = (out: ReturnType<typeof renderer>, tools: unknown) => {
  if (asArray(tools).length > 0) out.part("tools", asArray(tools))
}

/** A Responses input item: a message is its role and content, anything else its type and JSON. */
const renderItem = (out: ReturnType<typeof renderer>, item: unknown) => {
  if (typeof item === "string") return out.part("user", item)
  if (!isObject(item)) return out.part("item", canonicalJson(item))
  const type = item["type"] ?? "message"
  if (type === "message" && typeof item["role"] === "string")
    return out.part(item["role"], item["content"], without(item, ["type", "role", "content", "id", "status"]))
  return out.part(String(type), canonicalJson(without(item, ["id", "status"])))
}

export const renderPrompt = (api: Api, body: Json): RenderedPrompt => {
  const out = renderer()
  renderTools(out, body["tools"])
  if (api === "chat") {
    for (const message of asArray(body["messages"])) {
      const m = isObject(message) ? message : {}
      out.part(String(m["role"]), m["content"], without(m, ["role", "content"]))
    }
  } else if (api === "responses") {
    if (typeof body["instructions"] === "string" && body["instructions"] !== "")
      out.part("system", body["instructions"])
    const input = body["input"]
    for (const item of typeof input === "string" ? [input] : asArray(input)) renderItem(out, item)
  } else {
    const system = body["system"]
    if (system !== undefined && system !== null && system !== "") out.part("system", system)
    for (const message of asArray(body["messages"])) {
      const m = isObject(message) ? message : {}
      out.part(String(m["role"]), m["content"], without(m, ["role", "content"]))
    }
  }
  return out.done()
}

/**
 * The characters of `prompt` the provider has cached after `previous`: their common prefix, ending at
 * a part's start rather than inside its role line (a role is one token: `<|dev` does not match `<|ass`).
 */
export const cachedPrefix = (prompt: RenderedPrompt, previous: RenderedPrompt) => {
  const { text } = prompt
  const n = Math.min(text.length, previous.text.length)
  let i = 0
  while (i < n && text.charCodeAt(i) === previous.text.charCodeAt(i)) i++
  const inRole = prompt.parts.find(({ start }) => i > start && i <= text.indexOf("\n", start))
  return inRole === undefined ? i : inRole.start
}

/**
 * Characters of the context block(s) in a rendering from offset `from` on (the part the provider does
 * not have cached), with the framing the gateway adds: a part holding nothing but a block (a message or
 * item of its own) counts whole; a block inside another part counts with its preface and the whitespace
 * that joins it to the part's own text.
 */
export const injectedCharacters = (prompt: RenderedPrompt, from = 0) => {
  let total = 0
  const count = (start: number, end: number) => (total += Math.max(0, end - Math.max(start, from)))
  for (const { start, end } of prompt.parts) {
    const part = prompt.text.slice(start, end)
    const header = part.indexOf("\n") + 1
    const spans: Array<readonly [number, number]> = []
    for (let at = header; ; ) {
      const open = part.indexOf(OPEN_TAG, at)
      if (open === -1) break
      const close = part.indexOf(CLOSE_TAG, open)
      if (close === -1) break
      let spanStart = part.startsWith(`${PREFACE}\n`, open - PREFACE.length - 1) ? open - PREFACE.length - 1 : open
      let spanEnd = close + CLOSE_TAG.length
      while (spanStart > header && /\s/.test(part[spanStart - 1]!)) spanStart--
      while (spanEnd < part.length - 1 && /\s/.test(part[spanEnd]!)) spanEnd++
      spans.push([spanStart, spanEnd])
      at = spanEnd
    }
    if (spans.length === 0) continue
    const rest = spans.reduceRight((text, [s, e]) => text.slice(0, s) + text.slice(e), part.slice(0, -1)).slice(header)
    if (rest.trim() === "") count(start, end)
    else for (const [s, e] of spans) count(start + s, start + e)
  }
  return total
}

/** The text of a message with any context block taken out (the provider's answer must not depend on it). */
export const withoutBlocks = (text: string) => {
  let out = text
  for (;;) {
    const open = out.indexOf(OPEN_TAG)
    const close = open === -1 ? -1 : out.indexOf(CLOSE_TAG, open)
    if (close === -1) return out.trim()
    const start = out.lastIndexOf(PREFACE, open)
    out = out.slice(0, start === -1 ? open : start) + out.slice(close + CLOSE_TAG.length)
  }
}
