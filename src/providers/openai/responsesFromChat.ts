import * as Sse from "effect/encoding/Sse"
import { messageText } from "../../domain/messageText.ts"
import type { ChatCompletion, ChatCompletionChunk, ToolCall, Usage } from "./chat.ts"
import type { StreamEvent, StreamPiece } from "./stream.ts"

/**
 * A chat answer (`responsesViaChat.ts` sent the request as chat) as the Responses API's: a whole
 * completion as a response object, a chat stream as Responses events.
 */

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
