import { Predicate } from "effect"
import * as Sse from "effect/encoding/Sse"
import { UpstreamStreamError } from "../errors.ts"
import { finishReason, toOpenAiUsage } from "./response.ts"

type Json = Record<string, unknown>

export interface StreamTranslator {
  /** OpenAI SSE text for the Anthropic bytes seen so far; fails on an in-band Anthropic error. */
  readonly feed: (chunk: Uint8Array) => string | UpstreamStreamError
}

/**
 * Turns an Anthropic Messages event stream into OpenAI `chat.completion.chunk` events, one
 * upstream chunk at a time (nothing is held back beyond an incomplete event).
 */
export const makeStreamTranslator = (options: { readonly includeUsage: boolean; readonly created: number }): StreamTranslator => {
  const decoder = new TextDecoder()
  let id = ""
  let model = ""
  let usage: Json = {}
  let out = ""
  let failure: UpstreamStreamError | undefined
  const toolIndexOfBlock = new Map<number, number>()

  const emit = (delta: Json, finish: string | null = null) => {
    const chunk: Json = {
      id,
      object: "chat.completion.chunk",
      created: options.created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }]
    }
    if (options.includeUsage) chunk["usage"] = null
    out += `data: ${JSON.stringify(chunk)}\n\n`
  }

  const onEvent = (event: Sse.AnyEvent) => {
    if (event._tag !== "Event" || failure !== undefined) return
    let data: Json
    try {
      const parsed: unknown = JSON.parse(event.data)
      if (!Predicate.isObject(parsed)) return
      data = parsed
    } catch {
      return
    }
    switch (data["type"]) {
      case "message_start": {
        const message = Predicate.isObject(data["message"]) ? data["message"] : {}
        id = String(message["id"] ?? "")
        model = String(message["model"] ?? "")
        usage = Predicate.isObject(message["usage"]) ? { ...message["usage"] } : {}
        emit({ role: "assistant", content: "" })
        return
      }
      case "content_block_start": {
        const block = Predicate.isObject(data["content_block"]) ? data["content_block"] : {}
        if (block["type"] === "tool_use") {
          const index = toolIndexOfBlock.size
          toolIndexOfBlock.set(Number(data["index"]), index)
          emit({ tool_calls: [{ index, id: block["id"], type: "function", function: { name: block["name"], arguments: "" } }] })
        } else if (block["type"] === "text" && Predicate.isString(block["text"]) && block["text"] !== "") {
          emit({ content: block["text"] })
        }
        return
      }
      case "content_block_delta": {
        const delta = Predicate.isObject(data["delta"]) ? data["delta"] : {}
        if (delta["type"] === "text_delta") emit({ content: delta["text"] })
        else if (delta["type"] === "input_json_delta") {
          const index = toolIndexOfBlock.get(Number(data["index"]))
          if (index !== undefined) emit({ tool_calls: [{ index, function: { arguments: delta["partial_json"] } }] })
        }
        return
      }
      case "message_delta": {
        const delta = Predicate.isObject(data["delta"]) ? data["delta"] : {}
        if (Predicate.isObject(data["usage"])) usage = { ...usage, ...data["usage"] }
        emit({}, finishReason(delta["stop_reason"]))
        return
      }
      case "message_stop": {
        if (options.includeUsage) {
          const chunk = { id, object: "chat.completion.chunk", created: options.created, model, choices: [], usage: toOpenAiUsage(usage) }
          out += `data: ${JSON.stringify(chunk)}\n\n`
        }
        out += "data: [DONE]\n\n"
        return
      }
      case "error": {
        const error = Predicate.isObject(data["error"]) ? data["error"] : {}
        failure = new UpstreamStreamError({
          code: "upstream_stream_error",
          message: String(error["message"] ?? "The upstream stream failed")
        })
        return
      }
    }
  }

  const parser = Sse.makeParser(onEvent)
  return {
    feed: (chunk) => {
      out = ""
      parser.feed(decoder.decode(chunk, { stream: true }))
      return failure ?? out
    }
  }
}
