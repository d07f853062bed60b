import type { TokenUsage } from "../../domain/TokenUsage.ts"
import type { ChatCompletion, ModelList, ToolCall, Usage } from "../openai/chat.ts"
import { type AnthropicMessage, type AnthropicModelList, isTextBlock, isToolUseBlock } from "./messages.ts"
import { messagesUsage } from "./usage.ts"

/** Anthropic stop reasons in OpenAI's terms. */
export const finishReason = (stopReason: string | null | undefined): string | null => {
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

/**
 * Anthropic's usage (read as `TokenUsage`) in OpenAI's terms; cached input counts as prompt tokens,
 * as it does at OpenAI. No usage (none sent, or not readable): zeros.
 */
export const toOpenAiUsage = (usage: TokenUsage | undefined): Usage => {
  const prompt = usage?.input ?? 0
  const completion = usage?.output ?? 0
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: usage?.cachedInput ?? 0 }
  }
}

/** An Anthropic Messages response as an OpenAI chat completion (`usage`: its usage, when already read). */
export const toOpenAiCompletion = (
  message: AnthropicMessage,
  created: number,
  usage: TokenUsage | undefined = messagesUsage(message.usage)
): ChatCompletion => {
  const text = message.content
    .filter(isTextBlock)
    .map((block) => block.text)
    .join("")
  const toolCalls: Array<ToolCall> = message.content.filter(isToolUseBlock).map((block) => ({
    id: block.id,
    type: "function",
    function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) }
  }))
  return {
    id: message.id,
    object: "chat.completion",
    created,
    model: message.model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: text === "" && toolCalls.length > 0 ? null : text,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          refusal: null
        },
        finish_reason: finishReason(message.stop_reason),
        logprobs: null
      }
    ],
    usage: toOpenAiUsage(usage)
  }
}

/** An Anthropic model list as an OpenAI one. */
export const toOpenAiModelList = (list: AnthropicModelList): ModelList => ({
  object: "list",
  data: list.data.map((model) => ({
    id: model.id,
    object: "model",
    created: model.created_at === undefined ? 0 : Math.floor(Date.parse(model.created_at) / 1000),
    owned_by: "anthropic"
  }))
})
