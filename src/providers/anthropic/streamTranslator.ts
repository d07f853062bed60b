import { Exit, Predicate, Result, Schema } from "effect"
import * as Sse from "effect/encoding/Sse"
import type { TokenUsage } from "../../domain/TokenUsage.ts"
import { UpstreamStreamError } from "../errors.ts"
import type { ChatCompletionChunk, Usage } from "../openai/chat.ts"
import { DONE, type StreamEvent, type StreamPiece } from "../openai/stream.ts"
import { finishReason, toOpenAiUsage } from "./fromAnthropic.ts"
import {
  type AnthropicStreamEvent,
  AnthropicStreamEvent as EventSchema,
  isTextBlock,
  isToolUseBlock
} from "./messages.ts"
import { messagesUsage } from "./usage.ts"

type Delta = NonNullable<ChatCompletionChunk["choices"][number]["delta"]>

const decodeEvent = Schema.decodeUnknownExit(Schema.fromJsonString(EventSchema))

/**
 * Turns an Anthropic Messages event stream into OpenAI `chat.completion.chunk` events, one
 * upstream chunk at a time (nothing is held back beyond an incomplete event). `feed` gives the
 * events the bytes completed, or the in-band error Anthropic sent. The answer's usage is read once,
 * at its `message_delta` (the output counted, over `message_start`'s input figures).
 */
export const makeStreamTranslator = (options: { readonly includeUsage: boolean; readonly created: number }) => {
  const decoder = new TextDecoder()
  let id = ""
  let model = ""
  // The usage figures as sent, `message_delta`'s over `message_start`'s input ones, read when complete.
  let figures: Readonly<Record<string, unknown>> = {}
  let usage: TokenUsage | undefined
  let usageFed: TokenUsage | undefined
  let out: Array<StreamEvent> = []
  let failure: UpstreamStreamError | undefined
  const toolIndexOfBlock = new Map<number, number>()

  const chunk = (choices: ChatCompletionChunk["choices"], usage?: Usage): StreamEvent => ({
    _tag: "Chunk",
    chunk: {
      id,
      object: "chat.completion.chunk",
      created: options.created,
      model,
      choices,
      ...(options.includeUsage ? { usage: usage ?? null } : {})
    }
  })
  const emit = (delta: Delta, finish: string | null = null) =>
    out.push(chunk([{ index: 0, delta, finish_reason: finish, logprobs: null }]))

  const onEvent = (event: AnthropicStreamEvent) => {
    switch (event.type) {
      case "message_start":
        id = event.message.id
        model = event.message.model
        if (Predicate.isObject(event.message.usage)) {
          // Its input figures only: its output count is a placeholder, the answer's comes with message_delta.
          const { output_tokens: _placeholder, ...input } = event.message.usage
          figures = input
        }
        return emit({ role: "assistant", content: "" })
      case "content_block_start": {
        const block = event.content_block
        if (isToolUseBlock(block)) {
          const index = toolIndexOfBlock.size
          toolIndexOfBlock.set(event.index, index)
          return emit({
            tool_calls: [{ index, id: block.id, type: "function", function: { name: block.name, arguments: "" } }]
          })
        }
        if (isTextBlock(block) && block.text !== "") emit({ content: block.text })
        return
      }
      case "content_block_delta": {
        const { delta } = event
        if (delta.type === "text_delta") return emit({ content: delta.text ?? "" })
        const index = toolIndexOfBlock.get(event.index)
        if (delta.type === "input_json_delta" && index !== undefined) {
          emit({ tool_calls: [{ index, function: { arguments: delta.partial_json ?? "" } }] })
        }
        return
      }
      case "message_delta":
        if (Predicate.isObject(event.usage)) figures = { ...figures, ...event.usage }
        usage = messagesUsage(figures)
        usageFed = usage
        return emit({}, finishReason(event.delta.stop_reason))
      case "message_stop":
        if (options.includeUsage) out.push(chunk([], toOpenAiUsage(usage)))
        out.push(DONE)
        return
      case "error":
        failure = new UpstreamStreamError({
          code: "upstream_stream_error",
          message: event.error.message ?? "The upstream stream failed"
        })
    }
  }

  const parser = Sse.makeParser((event) => {
    if (event._tag !== "Event" || failure !== undefined) return
    // `ping` and events this translation has no use for are passed over.
    const decoded = decodeEvent(event.data)
    if (Exit.isSuccess(decoded)) onEvent(decoded.value)
  })
  return {
    feed: (bytes: Uint8Array): Result.Result<ReadonlyArray<StreamEvent>, UpstreamStreamError> => {
      out = []
      usageFed = undefined
      parser.feed(decoder.decode(bytes, { stream: true }))
      return failure === undefined ? Result.succeed(out) : Result.fail(failure)
    },
    /** The usage the bytes last fed completed (their `message_delta`'s), for the piece that carries them. */
    usageFed: (): TokenUsage | undefined => usageFed,
    /**
     * The model that answered (empty before `message_start`) and the answer's usage (none before its
     * `message_delta`, or not readable), whether or not the chunks carry it.
     */
    answer: (): { readonly model: string; readonly usage: TokenUsage | undefined } => ({ model, usage })
  }
}

/**
 * A native Anthropic stream read for the record: its bytes relayed as they came, its events read as
 * chat chunks, the piece with its `message_delta` carrying the usage. Its `error` event is relayed
 * as it is, and the answer, never complete, is not recorded.
 */
export const makeMessagesReader = () => {
  const translator = makeStreamTranslator({ includeUsage: false, created: Math.floor(Date.now() / 1000) })
  return (bytes: Uint8Array): StreamPiece => {
    const events = translator.feed(bytes)
    const usage = translator.usageFed()
    const read = Result.isSuccess(events) ? events.success : []
    return usage === undefined ? { bytes, events: read } : { bytes, events: read, usage }
  }
}
