import { Result, Schema } from "effect"
import * as Sse from "effect/encoding/Sse"
import { firstIssue } from "../domain/schemaIssues.ts"
import { Optional, type UnsupportedParameter, unsupported } from "../upstream/errors.ts"
import type { ChatCompletion, ChatCompletionChunk, ToolCall, Usage } from "./chat.ts"
import { messageText } from "./messageText.ts"
import { InputItem, type InputPart } from "./responses.ts"
import type { StreamEvent, StreamPiece } from "./stream.ts"

/**
 * The Responses API over a provider that only has Chat Completions (Anthropic, through the chat
 * translation): the request as the chat request it means, the chat answer as a response object, and
 * the chat stream as Responses events. What a chat request cannot carry is refused by name, never
 * dropped: conversation state kept by the provider (`previous_response_id`, `store`), built-in
 * tools, structured output.
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

// ---- the answer --------------------------------------------------------------------------------

const messageItem = (id: string, text: string, status: "in_progress" | "completed") => ({
  type: "message",
  id,
  status,
  role: "assistant",
  content: status === "in_progress" ? [] : [{ type: "output_text", text, annotations: [] }]
})

const functionCallItem = (call: ToolCall, status: "in_progress" | "completed") => ({
  type: "function_call",
  id: `fc_${call.id}`,
  call_id: call.id,
  name: call.function.name,
  arguments: status === "in_progress" ? "" : call.function.arguments,
  status
})

const responseUsage = (usage: Usage | null | undefined) =>
  usage == null
    ? null
    : {
        input_tokens: usage.prompt_tokens,
        input_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0 },
        output_tokens: usage.completion_tokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: usage.total_tokens
      }

/**
 * The state of a response the gateway keeps (`UPSTREAM_RESPONSES_STATE=gateway`): its id, chosen before
 * the provider answers, and the fields the response object echoes.
 */
export interface KeptResponse {
  readonly id: string
  readonly previousResponseId: string | null
  readonly conversationId: string | null
  readonly store: boolean
}

/** What the answer's item ids are made of: the kept response's own id (unique), else the provider's answer id. */
const itemIdBase = (kept: KeptResponse | undefined, answerId: string) =>
  kept === undefined ? answerId : kept.id.slice("resp_".length)

interface ResponseState {
  readonly id: string
  readonly model: string
  readonly createdAt: number
  readonly status: "in_progress" | "completed" | "incomplete"
  readonly output: ReadonlyArray<unknown>
  readonly usage: Usage | null | undefined
  readonly kept: KeptResponse | undefined
}

/** A response object in OpenAI's shape (the fields a client reads; no request settings echoed). */
const responseObject = (state: ResponseState) => ({
  id: state.id,
  object: "response",
  created_at: state.createdAt,
  status: state.status,
  error: null,
  incomplete_details: state.status === "incomplete" ? { reason: "max_output_tokens" } : null,
  model: state.model,
  output: state.output,
  parallel_tool_calls: true,
  previous_response_id: state.kept?.previousResponseId ?? null,
  conversation: state.kept?.conversationId == null ? null : { id: state.kept.conversationId },
  store: state.kept?.store ?? false,
  usage: responseUsage(state.usage)
})

export type TranslatedResponse = ReturnType<typeof responseObject>

/** A finish reason in the Responses API's terms: a cut answer is `incomplete`. */
const statusOf = (finishReason: string | null | undefined) => (finishReason === "length" ? "incomplete" : "completed")

/** A chat completion (the first choice) as a response object (the one the gateway keeps, when it keeps it). */
export const chatCompletionAsResponse = (completion: ChatCompletion, kept?: KeptResponse): TranslatedResponse => {
  const choice = completion.choices.find((candidate) => (candidate.index ?? 0) === 0)
  const text = choice === undefined ? "" : messageText(choice.message.content) || (choice.message.refusal ?? "")
  const calls = choice?.message.tool_calls ?? []
  const id = itemIdBase(kept, completion.id ?? "answer")
  return responseObject({
    id: kept?.id ?? `resp_${id}`,
    kept,
    model: completion.model ?? "",
    createdAt: completion.created ?? Math.floor(Date.now() / 1000),
    status: statusOf(choice?.finish_reason),
    output: [
      ...(text === "" && calls.length > 0 ? [] : [messageItem(`msg_${id}`, text, "completed")]),
      ...calls.map((call) => functionCallItem(call, "completed"))
    ],
    usage: completion.usage
  })
}

// ---- the stream --------------------------------------------------------------------------------

const encoder = new TextEncoder()

/**
 * Writes a chat stream's chunks as the Responses API's events (`response.created`, the output
 * items with their text and argument deltas, `response.completed`), numbered in order. Needs the
 * chunk with the usage (the chat stream asked with `include_usage`) before `[DONE]`. `finished` gets the
 * final response object (a response the gateway keeps is stored from it).
 */
export const makeResponsesEventWriter = (
  createdAt: number,
  kept?: KeptResponse,
  finished?: (response: TranslatedResponse) => void
) => {
  let sequence = 0
  let id = ""
  let model = ""
  let started = false
  let finishReason: string | null = null
  let usage: Usage | null | undefined
  /** The output items so far; the last one may still be open. */
  const output: Array<
    { kind: "message"; id: string; text: string; open: boolean } | { kind: "call"; call: ToolCall; open: boolean }
  > = []
  const callAt = new Map<number, number>()
  let frames: Array<string> = []

  const write = (type: string, data: Record<string, unknown>) => {
    frames.push(
      Sse.encoder.write({
        _tag: "Event",
        event: type,
        id: undefined,
        data: JSON.stringify({ type, sequence_number: sequence++, ...data })
      })
    )
  }
  const state = (status: ResponseState["status"]): ResponseState => ({
    id: kept?.id ?? `resp_${id}`,
    kept,
    model,
    createdAt,
    status,
    usage,
    output:
      status === "in_progress"
        ? []
        : output.map((item) =>
            item.kind === "message"
              ? messageItem(item.id, item.text, "completed")
              : functionCallItem(item.call, "completed")
          )
  })
  const close = () => {
    const index = output.length - 1
    const item = output[index]
    if (item === undefined || !item.open) return
    item.open = false
    if (item.kind === "message") {
      const part = { type: "output_text", text: item.text, annotations: [] }
      write("response.output_text.done", {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        text: item.text,
        logprobs: []
      })
      write("response.content_part.done", { item_id: item.id, output_index: index, content_index: 0, part })
      write("response.output_item.done", { output_index: index, item: messageItem(item.id, item.text, "completed") })
    } else {
      const itemId = `fc_${item.call.id}`
      write("response.function_call_arguments.done", {
        item_id: itemId,
        output_index: index,
        arguments: item.call.function.arguments
      })
      write("response.output_item.done", { output_index: index, item: functionCallItem(item.call, "completed") })
    }
  }
  const openMessage = () => {
    close()
    const item = { kind: "message" as const, id: `msg_${id}_${output.length}`, text: "", open: true }
    output.push(item)
    write("response.output_item.added", {
      output_index: output.length - 1,
      item: messageItem(item.id, "", "in_progress")
    })
    write("response.content_part.added", {
      item_id: item.id,
      output_index: output.length - 1,
      content_index: 0,
      part: { type: "output_text", text: "", annotations: [] }
    })
    return item
  }
  const text = (delta: string) => {
    const last = output.at(-1)
    const item = last !== undefined && last.kind === "message" && last.open ? last : openMessage()
    item.text += delta
    write("response.output_text.delta", {
      item_id: item.id,
      output_index: output.length - 1,
      content_index: 0,
      delta,
      logprobs: []
    })
  }
  type CallDelta = NonNullable<NonNullable<ChatCompletionChunk["choices"][number]["delta"]>["tool_calls"]>[number]
  const call = (delta: CallDelta) => {
    const known = callAt.get(delta.index ?? 0)
    if (known === undefined) {
      close()
      const opened: ToolCall = {
        id: delta.id ?? "",
        type: "function",
        function: { name: delta.function?.name ?? "", arguments: "" }
      }
      callAt.set(delta.index ?? 0, output.length)
      output.push({ kind: "call", call: opened, open: true })
      write("response.output_item.added", {
        output_index: output.length - 1,
        item: functionCallItem(opened, "in_progress")
      })
    }
    const index = callAt.get(delta.index ?? 0)!
    const item = output[index]
    const piece = delta.function?.arguments ?? ""
    if (item?.kind !== "call" || piece === "") return
    item.call = { ...item.call, function: { ...item.call.function, arguments: item.call.function.arguments + piece } }
    write("response.function_call_arguments.delta", {
      item_id: `fc_${item.call.id}`,
      output_index: index,
      delta: piece
    })
  }

  const begin = (chunk: ChatCompletionChunk | undefined) => {
    if (started) return
    started = true
    id = itemIdBase(kept, chunk?.id ?? "answer")
    model = chunk?.model ?? ""
    write("response.created", { response: responseObject(state("in_progress")) })
    write("response.in_progress", { response: responseObject(state("in_progress")) })
  }

  const onEvent = (event: StreamEvent) => {
    if (event._tag === "Done") {
      begin(undefined)
      // An answer says something: an empty one is an empty message, as a non-streamed answer has.
      if (output.length === 0) openMessage()
      close()
      const status = statusOf(finishReason)
      const response = responseObject(state(status))
      write(status === "incomplete" ? "response.incomplete" : "response.completed", { response })
      finished?.(response)
      return
    }
    const { chunk } = event
    begin(chunk)
    if (chunk.usage != null) usage = chunk.usage
    for (const choice of chunk.choices) {
      if ((choice.index ?? 0) !== 0) continue
      if (choice.delta?.content != null && choice.delta.content !== "") text(choice.delta.content)
      for (const delta of choice.delta?.tool_calls ?? []) call(delta)
      if (choice.finish_reason != null) finishReason = choice.finish_reason
    }
  }

  /** The Responses events for these chat events, as the bytes the client gets; the chat events stay with them for the record. */
  return (events: ReadonlyArray<StreamEvent>): StreamPiece => {
    frames = []
    for (const event of events) onEvent(event)
    return { bytes: encoder.encode(frames.join("")), events }
  }
}
