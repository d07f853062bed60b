import { Predicate } from "effect"
import * as Sse from "effect/encoding/Sse"

export interface AssembledReply {
  readonly content: string
  readonly toolCalls: ReadonlyArray<{ id: string; type: string; function: { name: string; arguments: string } }>
  readonly finishReason: string | null
}

/**
 * Rebuilds the first choice's assistant message from the OpenAI SSE bytes relayed to the client.
 * It reads a copy: the relayed bytes are never touched or held back.
 */
export const makeStreamAssembler = () => {
  const decoder = new TextDecoder()
  let content = ""
  let finishReason: string | null = null
  let done = false
  const toolCalls: Array<{ id: string; type: string; function: { name: string; arguments: string } }> = []

  const onDelta = (delta: Record<string, unknown>) => {
    if (Predicate.isString(delta["content"])) content += delta["content"]
    if (!Array.isArray(delta["tool_calls"])) return
    for (const call of delta["tool_calls"]) {
      if (!Predicate.isObject(call)) continue
      const index = Predicate.isNumber(call["index"]) ? call["index"] : toolCalls.length
      const entry = toolCalls[index] ??= { id: "", type: "function", function: { name: "", arguments: "" } }
      if (Predicate.isString(call["id"])) entry.id = call["id"]
      if (Predicate.isString(call["type"])) entry.type = call["type"]
      const fn = call["function"]
      if (Predicate.isObject(fn)) {
        if (Predicate.isString(fn["name"])) entry.function.name += fn["name"]
        if (Predicate.isString(fn["arguments"])) entry.function.arguments += fn["arguments"]
      }
    }
  }

  const parser = Sse.makeParser((event) => {
    if (event._tag !== "Event" || event.event !== "message") return
    if (event.data === "[DONE]") {
      done = true
      return
    }
    let chunk: unknown
    try {
      chunk = JSON.parse(event.data)
    } catch {
      return
    }
    const choices = Predicate.isObject(chunk) && Array.isArray(chunk["choices"]) ? chunk["choices"] : []
    for (const choice of choices) {
      if (!Predicate.isObject(choice) || (choice["index"] ?? 0) !== 0) continue
      if (Predicate.isObject(choice["delta"])) onDelta(choice["delta"])
      if (Predicate.isString(choice["finish_reason"])) finishReason = choice["finish_reason"]
    }
  })

  return {
    feed: (chunk: Uint8Array) => {
      parser.feed(decoder.decode(chunk, { stream: true }))
    },
    /** The stream ended the way a finished answer does (`[DONE]` or a finish reason). */
    isComplete: () => done || finishReason !== null,
    reply: (): AssembledReply => ({ content, toolCalls: toolCalls.filter(Boolean), finishReason })
  }
}
