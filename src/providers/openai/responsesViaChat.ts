import { Result, Schema } from "effect"
import { firstIssue } from "../../domain/schemaIssues.ts"
import { Optional, type UnsupportedParameter, unsupported } from "../errors.ts"
import { InputItem, type InputPart } from "./responses.ts"

/**
 * The Responses API over a provider that only has Chat Completions (Anthropic, through the chat
 * translation): the request as the chat request it means, the chat answer as a response object, and
 * the chat stream as Responses events. What a chat request cannot carry is refused by name, never
 * dropped: conversation state kept by the provider (`previous_response_id`, `store`), built-in
 * tools, structured output. The answer's way back: `responsesFromChat.ts`.
 */

/** The Responses request fields this translation carries over (or checks and refuses). */
const TranslatedResponsesRequest = Schema.Struct({
  model: Schema.String,
  input: Schema.optionalKey(Schema.Union([Schema.String, Schema.Array(InputItem)])),
  instructions: Optional(Schema.String),
  max_output_tokens: Optional(Schema.Number),
  temperature: Optional(Schema.Number),
  top_p: Optional(Schema.Number),
  stream: Optional(Schema.Boolean),
  user: Optional(Schema.String),
  safety_identifier: Optional(Schema.String),
  tools: Optional(
    Schema.Array(
      Schema.Struct({
        type: Schema.String,
        name: Schema.optionalKey(Schema.String),
        description: Optional(Schema.String),
        parameters: Optional(Schema.Unknown),
        strict: Optional(Schema.Boolean)
      })
    )
  ),
  tool_choice: Optional(
    Schema.Union([Schema.String, Schema.Struct({ type: Schema.String, name: Schema.optionalKey(Schema.String) })])
  ),
  parallel_tool_calls: Optional(Schema.Boolean),
  previous_response_id: Optional(Schema.String),
  store: Optional(Schema.Boolean),
  background: Optional(Schema.Boolean),
  text: Optional(Schema.Struct({ format: Optional(Schema.Struct({ type: Schema.String })) }))
})
type TranslatedResponsesRequest = typeof TranslatedResponsesRequest.Type

/** Options that do not change what a correct answer looks like: left out rather than refused (as for chat). */
const IGNORED = new Set([
  "metadata",
  "reasoning",
  "include",
  "truncation",
  "prompt_cache_key",
  "service_tier",
  "top_logprobs",
  "stream_options"
])
const TRANSLATED = new Set(Object.keys(TranslatedResponsesRequest.fields))

const decodeRequest = Schema.decodeUnknownResult(TranslatedResponsesRequest)

type ChatContentPart =
  | { readonly type: "text"; readonly text: string }
  | {
      readonly type: "image_url"
      readonly image_url: { readonly url: string }
    }

const chatParts = (
  parts: ReadonlyArray<InputPart>,
  param: string
): Result.Result<Array<ChatContentPart>, UnsupportedParameter> => {
  const out: Array<ChatContentPart> = []
  for (const [index, part] of parts.entries()) {
    if (part.type === "input_text" || part.type === "output_text") out.push({ type: "text", text: part.text ?? "" })
    else if (part.type === "refusal") out.push({ type: "text", text: part.refusal ?? "" })
    else if (part.type === "input_image" && typeof part.image_url === "string")
      out.push({ type: "image_url", image_url: { url: part.image_url } })
    else return unsupported(`${param}.${index}`, `input parts of type '${part.type}' cannot be sent to this provider`)
  }
  return Result.succeed(out)
}

/** An item's content (or a function's output) as chat message content. */
const chatContent = (
  content: string | ReadonlyArray<InputPart> | undefined,
  param: string
): Result.Result<string | Array<ChatContentPart>, UnsupportedParameter> =>
  typeof content === "string" ? Result.succeed(content) : chatParts(content ?? [], param)

const ROLES = new Set(["user", "assistant", "system", "developer"])

/** The input items as chat messages: messages, function calls (the assistant's) and their outputs (tool messages). */
const chatMessages = (
  request: TranslatedResponsesRequest
): Result.Result<Array<Record<string, unknown>>, UnsupportedParameter> => {
  const messages: Array<Record<string, unknown>> = []
  if (request.instructions != null && request.instructions !== "")
    messages.push({ role: "system", content: request.instructions })
  const input = request.input ?? []
  if (typeof input === "string") return Result.succeed([...messages, { role: "user", content: input }])
  for (const [index, item] of input.entries()) {
    const param = `input.${index}`
    const type = item.type ?? "message"
    if (type === "message") {
      if (item.role === undefined || !ROLES.has(item.role)) {
        return unsupported(`${param}.role`, `the role '${item.role ?? ""}' cannot be sent to this provider`)
      }
      const content = chatContent(item.content, `${param}.content`)
      if (Result.isFailure(content)) return Result.fail(content.failure)
      messages.push({ role: item.role, content: content.success })
    } else if (type === "function_call") {
      const call = {
        id: item.call_id ?? "",
        type: "function",
        function: { name: item.name ?? "", arguments: item.arguments ?? "{}" }
      }
      // Calls made together are one assistant message in chat terms.
      const last = messages.at(-1)
      if (last?.["role"] === "assistant" && Array.isArray(last["tool_calls"])) last["tool_calls"].push(call)
      else messages.push({ role: "assistant", content: null, tool_calls: [call] })
    } else if (type === "function_call_output") {
      const output = chatContent(item.output, `${param}.output`)
      if (Result.isFailure(output)) return Result.fail(output.failure)
      messages.push({ role: "tool", tool_call_id: item.call_id ?? "", content: output.success })
    } else {
      return unsupported(`${param}.type`, `input items of type '${type}' cannot be sent to this provider`)
    }
  }
  return Result.succeed(messages)
}

const chatTools = (
  request: TranslatedResponsesRequest
): Result.Result<Array<Record<string, unknown>> | undefined, UnsupportedParameter> => {
  if (request.tools == null) return Result.succeed(undefined)
  const out: Array<Record<string, unknown>> = []
  for (const [index, tool] of request.tools.entries()) {
    if (tool.type !== "function" || tool.name === undefined) {
      return unsupported(
        `tools.${index}`,
        `built-in tools ('${tool.type}') cannot be sent to this provider; only function tools can`
      )
    }
    out.push({
      type: "function",
      function: {
        name: tool.name,
        ...(tool.description == null ? {} : { description: tool.description }),
        ...(tool.parameters == null ? {} : { parameters: tool.parameters })
      }
    })
  }
  return Result.succeed(out)
}

const chatToolChoice = (
  choice: TranslatedResponsesRequest["tool_choice"]
): Result.Result<unknown, UnsupportedParameter> => {
  if (choice == null || typeof choice === "string") return Result.succeed(choice ?? undefined)
  if (choice.type === "function" && choice.name !== undefined)
    return Result.succeed({ type: "function", function: { name: choice.name } })
  return unsupported("tool_choice", `a tool_choice of type '${choice.type}' cannot be sent to this provider`)
}

/** A Responses request (as it is forwarded) as the Chat Completions request it means. */
export const responsesAsChatRequest = (
  body: Readonly<Record<string, unknown>>
): Result.Result<Record<string, unknown>, UnsupportedParameter> => {
  for (const key of Object.keys(body)) {
    if (!TRANSLATED.has(key) && !IGNORED.has(key))
      return unsupported(key, `'${key}' cannot be sent to this provider through the Responses API`)
  }
  const decoded = decodeRequest(body)
  if (Result.isFailure(decoded)) {
    const issue = firstIssue(decoded.failure)
    const param = issue.path.join(".")
    return unsupported(param, `'${param}' cannot be sent to this provider: ${issue.message}`)
  }
  const request = decoded.success
  if (request.previous_response_id != null) {
    return unsupported(
      "previous_response_id",
      "This provider keeps no conversation state: send the whole conversation in 'input' instead of previous_response_id"
    )
  }
  if (request.store === true)
    return unsupported("store", "This provider does not store responses: send store: false or leave it out")
  if (request.background === true)
    return unsupported("background", "Background responses are not supported by this provider")
  const format = request.text?.format
  if (format != null && format.type !== "text")
    return unsupported("text.format", `text.format '${format.type}' is not supported by this provider`)

  const messages = chatMessages(request)
  if (Result.isFailure(messages)) return Result.fail(messages.failure)
  const tools = chatTools(request)
  if (Result.isFailure(tools)) return Result.fail(tools.failure)
  const toolChoice = chatToolChoice(request.tool_choice)
  if (Result.isFailure(toolChoice)) return Result.fail(toolChoice.failure)
  return Result.succeed({
    model: request.model,
    messages: messages.success,
    ...(request.max_output_tokens == null ? {} : { max_completion_tokens: request.max_output_tokens }),
    ...(request.temperature == null ? {} : { temperature: request.temperature }),
    ...(request.top_p == null ? {} : { top_p: request.top_p }),
    ...(request.stream === true ? { stream: true } : {}),
    ...(request.user == null ? {} : { user: request.user }),
    ...(request.safety_identifier == null ? {} : { safety_identifier: request.safety_identifier }),
    ...(tools.success === undefined ? {} : { tools: tools.success }),
    ...(toolChoice.success === undefined ? {} : { tool_choice: toolChoice.success }),
    ...(request.parallel_tool_calls == null ? {} : { parallel_tool_calls: request.parallel_tool_calls })
  })
}
