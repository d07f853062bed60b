import { Predicate } from "effect"

type Json = Record<string, unknown>

/** Anthropic stop reasons in OpenAI's terms. */
export const finishReason = (stopReason: unknown): string | null => {
  switch (stopReason) {
    case null:
    case undefined:
      return null
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length"
    case "tool_use":
      return "tool_calls"
    case "refusal":
      return "content_filter"
    default:
      return "stop"
  }
}

const count = (value: unknown) => (Predicate.isNumber(value) ? value : 0)

/** Anthropic usage in OpenAI's terms; cached input counts as prompt tokens, as it does at OpenAI. */
export const toOpenAiUsage = (usage: unknown): Json => {
  const u = Predicate.isObject(usage) ? usage : {}
  const cached = count(u["cache_read_input_tokens"])
  const prompt = count(u["input_tokens"]) + count(u["cache_creation_input_tokens"]) + cached
  const completion = count(u["output_tokens"])
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached }
  }
}

/** An Anthropic Messages response as an OpenAI chat completion. */
export const toOpenAiCompletion = (message: Json, created: number): Json => {
  const blocks = Array.isArray(message["content"]) ? message["content"].filter(Predicate.isObject) : []
  const text = blocks.filter((b) => b["type"] === "text").map((b) => String(b["text"] ?? "")).join("")
  const toolCalls = blocks
    .filter((b) => b["type"] === "tool_use")
    .map((b) => ({ id: b["id"], type: "function", function: { name: b["name"], arguments: JSON.stringify(b["input"] ?? {}) } }))
  return {
    id: message["id"],
    object: "chat.completion",
    created,
    model: message["model"],
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: text === "" && toolCalls.length > 0 ? null : text,
        ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        refusal: null
      },
      finish_reason: finishReason(message["stop_reason"]),
      logprobs: null
    }],
    usage: toOpenAiUsage(message["usage"])
  }
}

/** An Anthropic model list (`GET /models`) as an OpenAI one. */
export const toOpenAiModelList = (list: Json): Json => ({
  object: "list",
  data: (Array.isArray(list["data"]) ? list["data"].filter(Predicate.isObject) : []).map((model) => ({
    id: model["id"],
    object: "model",
    created: Predicate.isString(model["created_at"]) ? Math.floor(Date.parse(model["created_at"]) / 1000) : 0,
    owned_by: "anthropic"
  }))
})
