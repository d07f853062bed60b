import { Predicate, Result } from "effect"
import { textOf } from "../../domain/messageContent.ts"
import { UnsupportedParameter } from "../errors.ts"

type Json = Record<string, unknown>
type Block = Json

/** Anthropic requires `max_tokens`; OpenAI callers often leave it out. */
export const DEFAULT_MAX_TOKENS = 4096

/**
 * OpenAI-only sampling and storage options with no Anthropic counterpart. They do not change
 * what a correct answer looks like, so they are left out rather than refused.
 */
const IGNORED = new Set([
  "frequency_penalty",
  "presence_penalty",
  "logit_bias",
  "seed",
  "store",
  "metadata",
  "service_tier",
  "prediction",
  "reasoning_effort",
  "verbosity",
  "web_search_options",
  "modalities",
  "stream_options",
  "safety_identifier",
  "prompt_cache_key",
  "top_logprobs"
])

/** Fields this translation carries over (or checks and refuses) explicitly. */
const TRANSLATED = new Set([
  "model",
  "messages",
  "max_tokens",
  "max_completion_tokens",
  "temperature",
  "top_p",
  "stop",
  "stream",
  "user",
  "n",
  "response_format",
  "logprobs",
  "audio",
  "tools",
  "tool_choice",
  "parallel_tool_calls"
])

const unsupported = (param: string, message: string) => Result.fail(new UnsupportedParameter({ param, message }))

const imageBlock = (part: Json, param: string): Result.Result<Block, UnsupportedParameter> => {
  const image = part["image_url"]
  const url = Predicate.isString(image) ? image : Predicate.isObject(image) ? image["url"] : undefined
  if (!Predicate.isString(url)) return unsupported(param, "image_url parts need a url")
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url)
  return Result.succeed(
    data === null
      ? { type: "image", source: { type: "url", url } }
      : { type: "image", source: { type: "base64", media_type: data[1], data: data[2] } }
  )
}

const userBlocks = (content: unknown, param: string): Result.Result<Array<Block>, UnsupportedParameter> => {
  if (Predicate.isString(content)) return Result.succeed([{ type: "text", text: content }])
  if (!Array.isArray(content)) return Result.succeed([])
  const blocks: Array<Block> = []
  for (const [index, part] of content.entries()) {
    if (!Predicate.isObject(part)) return unsupported(`${param}.${index}`, "content parts must be objects")
    if (part["type"] === "text") blocks.push({ type: "text", text: String(part["text"] ?? "") })
    else if (part["type"] === "image_url") {
      const block = imageBlock(part, `${param}.${index}`)
      if (Result.isFailure(block)) return Result.fail(block.failure)
      blocks.push(block.success)
    } else return unsupported(`${param}.${index}`, `content parts of type '${String(part["type"])}' cannot be sent to Anthropic`)
  }
  return Result.succeed(blocks)
}

const toolUseBlocks = (toolCalls: unknown, param: string): Result.Result<Array<Block>, UnsupportedParameter> => {
  if (!Array.isArray(toolCalls)) return Result.succeed([])
  const blocks: Array<Block> = []
  for (const [index, call] of toolCalls.entries()) {
    const fn = Predicate.isObject(call) ? call["function"] : undefined
    if (!Predicate.isObject(call) || !Predicate.isObject(fn)) return unsupported(`${param}.${index}`, "tool calls must be function calls")
    let input: unknown
    try {
      input = JSON.parse(String(fn["arguments"] ?? "{}") || "{}")
    } catch {
      return unsupported(`${param}.${index}.function.arguments`, "tool call arguments must be JSON")
    }
    blocks.push({ type: "tool_use", id: call["id"], name: fn["name"], input })
  }
  return Result.succeed(blocks)
}

/** Anthropic wants alternating turns; consecutive messages of one role become one message. */
const appendTurn = (messages: Array<{ role: string; content: Array<Block> }>, role: string, blocks: Array<Block>) => {
  if (blocks.length === 0) return
  const last = messages[messages.length - 1]
  if (last !== undefined && last.role === role) last.content.push(...blocks)
  else messages.push({ role, content: blocks })
}

const toolChoice = (choice: unknown, parallel: unknown): Result.Result<Json | undefined, UnsupportedParameter> => {
  const disable = parallel === false ? { disable_parallel_tool_use: true } : {}
  if (choice === undefined || choice === null) return Result.succeed(parallel === false ? { type: "auto", ...disable } : undefined)
  if (choice === "none") return Result.succeed({ type: "none" })
  if (choice === "auto") return Result.succeed({ type: "auto", ...disable })
  if (choice === "required") return Result.succeed({ type: "any", ...disable })
  if (Predicate.isObject(choice) && Predicate.isObject(choice["function"])) {
    return Result.succeed({ type: "tool", name: choice["function"]["name"], ...disable })
  }
  return unsupported("tool_choice", "tool_choice must be none, auto, required or a function")
}

const tools = (list: unknown): Result.Result<Array<Json> | undefined, UnsupportedParameter> => {
  if (list === undefined || list === null) return Result.succeed(undefined)
  if (!Array.isArray(list)) return unsupported("tools", "tools must be an array")
  const out: Array<Json> = []
  for (const [index, tool] of list.entries()) {
    const fn = Predicate.isObject(tool) ? tool["function"] : undefined
    if (!Predicate.isObject(tool) || tool["type"] !== "function" || !Predicate.isObject(fn)) {
      return unsupported(`tools.${index}`, "only function tools can be sent to Anthropic")
    }
    out.push({
      name: fn["name"],
      ...(fn["description"] === undefined ? {} : { description: fn["description"] }),
      input_schema: fn["parameters"] ?? { type: "object", properties: {} }
    })
  }
  return Result.succeed(out)
}

/** An OpenAI chat completion request as an Anthropic Messages request. */
export const toAnthropicRequest = (body: Json): Result.Result<Json, UnsupportedParameter> => {
  const n = body["n"]
  if (n !== undefined && n !== null && n !== 1) return unsupported("n", "Anthropic returns one choice per request (n must be 1)")
  const format = body["response_format"]
  if (Predicate.isObject(format) && format["type"] !== "text") {
    return unsupported("response_format", "response_format is not supported by the Anthropic upstream")
  }
  if (body["logprobs"] === true) return unsupported("logprobs", "logprobs are not supported by the Anthropic upstream")
  if (body["audio"] !== undefined && body["audio"] !== null) return unsupported("audio", "audio output is not supported by the Anthropic upstream")

  const system: Array<string> = []
  const messages: Array<{ role: string; content: Array<Block> }> = []
  const input = Array.isArray(body["messages"]) ? body["messages"] : []
  for (const [index, message] of input.entries()) {
    const param = `messages.${index}`
    if (!Predicate.isObject(message)) return unsupported(param, "messages must be objects")
    const role = message["role"]
    if (role === "system" || role === "developer") {
      const text = textOf(message["content"])
      if (text !== "") system.push(text)
    } else if (role === "user") {
      const blocks = userBlocks(message["content"], `${param}.content`)
      if (Result.isFailure(blocks)) return Result.fail(blocks.failure)
      appendTurn(messages, "user", blocks.success)
    } else if (role === "assistant") {
      const text = textOf(message["content"])
      const calls = toolUseBlocks(message["tool_calls"], `${param}.tool_calls`)
      if (Result.isFailure(calls)) return Result.fail(calls.failure)
      appendTurn(messages, "assistant", [...(text === "" ? [] : [{ type: "text", text }]), ...calls.success])
    } else if (role === "tool") {
      appendTurn(messages, "user", [{
        type: "tool_result",
        tool_use_id: message["tool_call_id"],
        content: textOf(message["content"])
      }])
    } else {
      return unsupported(`${param}.role`, `the role '${String(role)}' cannot be sent to Anthropic`)
    }
  }

  const choice = toolChoice(body["tool_choice"], body["parallel_tool_calls"])
  if (Result.isFailure(choice)) return Result.fail(choice.failure)
  const toolList = tools(body["tools"])
  if (Result.isFailure(toolList)) return Result.fail(toolList.failure)

  const request: Json = {
    model: body["model"],
    max_tokens: body["max_completion_tokens"] ?? body["max_tokens"] ?? DEFAULT_MAX_TOKENS,
    messages
  }
  if (system.length > 0) request["system"] = system.join("\n\n")
  // Anthropic's temperature range is 0–1; OpenAI's is 0–2.
  if (Predicate.isNumber(body["temperature"])) request["temperature"] = Math.min(body["temperature"], 1)
  if (body["top_p"] !== undefined && body["top_p"] !== null) request["top_p"] = body["top_p"]
  const stop = body["stop"]
  if (stop !== undefined && stop !== null) request["stop_sequences"] = Array.isArray(stop) ? stop : [stop]
  if (body["stream"] === true) request["stream"] = true
  if (Predicate.isString(body["user"])) request["metadata"] = { user_id: body["user"] }
  if (toolList.success !== undefined) request["tools"] = toolList.success
  if (choice.success !== undefined) request["tool_choice"] = choice.success
  for (const key of Object.keys(body)) {
    if (!TRANSLATED.has(key) && !IGNORED.has(key)) {
      return unsupported(key, `'${key}' is not supported by the Anthropic upstream`)
    }
  }
  return Result.succeed(request)
}
