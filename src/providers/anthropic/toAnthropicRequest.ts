import { Exit, Result, Schema } from "effect"
import { messageText } from "../../domain/messageText.ts"
import { firstIssue } from "../../domain/schemaIssues.ts"
import { Optional, type UnsupportedParameter, unsupported } from "../errors.ts"
import { type ContentPart, MessageContent } from "../openai/chat.ts"

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
  "prompt_cache_key",
  "top_logprobs"
])

/** The OpenAI request fields this translation carries over (or checks and refuses). */
const TranslatedRequest = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(
    Schema.Struct({
      role: Schema.String,
      content: Schema.optionalKey(MessageContent),
      tool_calls: Optional(
        Schema.Array(
          Schema.Struct({
            id: Schema.String,
            function: Schema.Struct({ name: Schema.String, arguments: Schema.optionalKey(Schema.String) })
          })
        )
      ),
      tool_call_id: Optional(Schema.String)
    })
  ),
  max_tokens: Optional(Schema.Number),
  max_completion_tokens: Optional(Schema.Number),
  temperature: Optional(Schema.Number),
  top_p: Optional(Schema.Number),
  stop: Optional(Schema.Union([Schema.String, Schema.Array(Schema.String)])),
  stream: Optional(Schema.Boolean),
  user: Optional(Schema.String),
  safety_identifier: Optional(Schema.String),
  n: Optional(Schema.Number),
  response_format: Optional(Schema.Struct({ type: Schema.String })),
  logprobs: Optional(Schema.Boolean),
  audio: Schema.optionalKey(Schema.Unknown),
  tools: Optional(
    Schema.Array(
      Schema.Struct({
        type: Schema.String,
        function: Schema.optionalKey(
          Schema.Struct({
            name: Schema.String,
            description: Schema.optionalKey(Schema.String),
            parameters: Schema.optionalKey(Schema.Unknown)
          })
        )
      })
    )
  ),
  tool_choice: Optional(
    Schema.Union([Schema.String, Schema.Struct({ function: Schema.Struct({ name: Schema.String }) })])
  ),
  parallel_tool_calls: Optional(Schema.Boolean)
})
type TranslatedRequest = typeof TranslatedRequest.Type

const TRANSLATED = new Set(Object.keys(TranslatedRequest.fields))

const decodeRequest = Schema.decodeUnknownResult(TranslatedRequest)
const decodeArguments = Schema.decodeUnknownExit(Schema.fromJsonString(Schema.Unknown))

type Block = Readonly<Record<string, unknown>>
type Turn = { readonly role: "user" | "assistant"; readonly content: Array<Block> }

const imageBlock = (part: ContentPart): Block | undefined => {
  const url = typeof part.image_url === "string" ? part.image_url : part.image_url?.url
  if (url === undefined) return undefined
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url)
  return data === null
    ? { type: "image", source: { type: "url", url } }
    : { type: "image", source: { type: "base64", media_type: data[1], data: data[2] } }
}

const userBlocks = (
  content: MessageContent | undefined,
  param: string
): Result.Result<Array<Block>, UnsupportedParameter> => {
  if (typeof content === "string") return Result.succeed([{ type: "text", text: content }])
  const blocks: Array<Block> = []
  for (const [index, part] of (content ?? []).entries()) {
    if (part.type === "text") {
      blocks.push({ type: "text", text: part.text ?? "" })
      continue
    }
    if (part.type !== "image_url") {
      return unsupported(`${param}.${index}`, `content parts of type '${part.type}' cannot be sent to Anthropic`)
    }
    const image = imageBlock(part)
    if (image === undefined) return unsupported(`${param}.${index}`, "image_url parts need a url")
    blocks.push(image)
  }
  return Result.succeed(blocks)
}

const toolUseBlocks = (
  calls: NonNullable<TranslatedRequest["messages"][number]["tool_calls"]>,
  param: string
): Result.Result<Array<Block>, UnsupportedParameter> => {
  const blocks: Array<Block> = []
  for (const [index, call] of calls.entries()) {
    const input = decodeArguments(call.function.arguments || "{}")
    if (Exit.isFailure(input))
      return unsupported(`${param}.${index}.function.arguments`, "tool call arguments must be JSON")
    blocks.push({ type: "tool_use", id: call.id, name: call.function.name, input: input.value })
  }
  return Result.succeed(blocks)
}

/** Anthropic wants alternating turns; consecutive messages of one role become one message. */
const appendTurn = (turns: Array<Turn>, role: Turn["role"], blocks: Array<Block>) => {
  if (blocks.length === 0) return
  const last = turns[turns.length - 1]
  if (last !== undefined && last.role === role) last.content.push(...blocks)
  else turns.push({ role, content: blocks })
}

const toolChoice = (request: TranslatedRequest): Result.Result<Block | undefined, UnsupportedParameter> => {
  const choice = request.tool_choice
  const disable = request.parallel_tool_calls === false ? { disable_parallel_tool_use: true } : {}
  if (choice === undefined || choice === null) {
    return Result.succeed(request.parallel_tool_calls === false ? { type: "auto", ...disable } : undefined)
  }
  if (choice === "none") return Result.succeed({ type: "none" })
  if (choice === "auto") return Result.succeed({ type: "auto", ...disable })
  if (choice === "required") return Result.succeed({ type: "any", ...disable })
  if (typeof choice !== "string") return Result.succeed({ type: "tool", name: choice.function.name, ...disable })
  return unsupported("tool_choice", "tool_choice must be none, auto, required or a function")
}

const tools = (request: TranslatedRequest): Result.Result<Array<Block> | undefined, UnsupportedParameter> => {
  if (request.tools === undefined || request.tools === null) return Result.succeed(undefined)
  const out: Array<Block> = []
  for (const [index, tool] of request.tools.entries()) {
    if (tool.type !== "function" || tool.function === undefined) {
      return unsupported(`tools.${index}`, "only function tools can be sent to Anthropic")
    }
    out.push({
      name: tool.function.name,
      ...(tool.function.description === undefined ? {} : { description: tool.function.description }),
      input_schema: tool.function.parameters ?? { type: "object", properties: {} }
    })
  }
  return Result.succeed(out)
}

/** An OpenAI chat completion request (as it is forwarded) as an Anthropic Messages request. */
export const toAnthropicRequest = (
  body: Readonly<Record<string, unknown>>
): Result.Result<Block, UnsupportedParameter> => {
  for (const key of Object.keys(body)) {
    if (!TRANSLATED.has(key) && !IGNORED.has(key))
      return unsupported(key, `'${key}' is not supported by the Anthropic upstream`)
  }
  const decoded = decodeRequest(body)
  if (Result.isFailure(decoded)) {
    const issue = firstIssue(decoded.failure)
    const param = issue.path.join(".")
    return unsupported(param, `'${param}' cannot be sent to Anthropic: ${issue.message}`)
  }
  const request = decoded.success
  if (request.n !== undefined && request.n !== null && request.n !== 1) {
    return unsupported("n", "Anthropic returns one choice per request (n must be 1)")
  }
  if (request.response_format != null && request.response_format.type !== "text") {
    return unsupported("response_format", "response_format is not supported by the Anthropic upstream")
  }
  if (request.logprobs === true) return unsupported("logprobs", "logprobs are not supported by the Anthropic upstream")
  if (request.audio !== undefined && request.audio !== null) {
    return unsupported("audio", "audio output is not supported by the Anthropic upstream")
  }

  const system: Array<string> = []
  const turns: Array<Turn> = []
  for (const [index, message] of request.messages.entries()) {
    const param = `messages.${index}`
    switch (message.role) {
      case "system":
      case "developer": {
        const text = messageText(message.content)
        if (text !== "") system.push(text)
        break
      }
      case "user": {
        const blocks = userBlocks(message.content, `${param}.content`)
        if (Result.isFailure(blocks)) return Result.fail(blocks.failure)
        appendTurn(turns, "user", blocks.success)
        break
      }
      case "assistant": {
        const text = messageText(message.content)
        const calls = toolUseBlocks(message.tool_calls ?? [], `${param}.tool_calls`)
        if (Result.isFailure(calls)) return Result.fail(calls.failure)
        appendTurn(turns, "assistant", [...(text === "" ? [] : [{ type: "text", text }]), ...calls.success])
        break
      }
      case "tool":
        appendTurn(turns, "user", [
          { type: "tool_result", tool_use_id: message.tool_call_id, content: messageText(message.content) }
        ])
        break
      default:
        return unsupported(`${param}.role`, `the role '${message.role}' cannot be sent to Anthropic`)
    }
  }

  const choice = toolChoice(request)
  if (Result.isFailure(choice)) return Result.fail(choice.failure)
  const toolList = tools(request)
  if (Result.isFailure(toolList)) return Result.fail(toolList.failure)

  const stop = request.stop
  const endUser = request.safety_identifier ?? request.user
  return Result.succeed({
    model: request.model,
    max_tokens: request.max_completion_tokens ?? request.max_tokens ?? DEFAULT_MAX_TOKENS,
    messages: turns,
    ...(system.length > 0 ? { system: system.join("\n\n") } : {}),
    // Anthropic's temperature range is 0–1; OpenAI's is 0–2.
    ...(typeof request.temperature === "number" ? { temperature: Math.min(request.temperature, 1) } : {}),
    ...(request.top_p != null ? { top_p: request.top_p } : {}),
    ...(stop != null ? { stop_sequences: typeof stop === "string" ? [stop] : stop } : {}),
    ...(request.stream === true ? { stream: true } : {}),
    // Anthropic's one end-user field; OpenAI's newer `safety_identifier` wins over `user`, as for the gateway's user id.
    ...(endUser == null ? {} : { metadata: { user_id: endUser } }),
    ...(toolList.success === undefined ? {} : { tools: toolList.success }),
    ...(choice.success === undefined ? {} : { tool_choice: choice.success })
  })
}
