import { Schema } from "effect"

/**
 * The Anthropic Messages wire format, as far as the gateway reads it. Unknown fields are ignored;
 * unknown content blocks and stream events are kept as `{ type }` and passed over.
 */

/**
 * An answer's `usage`, read apart (`providers/anthropic/usage.ts` `messagesUsage`): an odd usage costs
 * the answer nothing, neither its translation nor its record.
 */
const Usage = Schema.optionalKey(
  Schema.Unknown.annotate({
    description:
      "The tokens counted: `input_tokens` (after the last cache breakpoint), `cache_read_input_tokens`, " +
      "`cache_creation_input_tokens`, `output_tokens`"
  })
)

export const TextBlock = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
export const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: Schema.optionalKey(Schema.Unknown)
})
/** Thinking, server tools, citations…: nothing the OpenAI answer has a place for. */
const OtherBlock = Schema.Struct({ type: Schema.String })
export const ContentBlock = Schema.Union([TextBlock, ToolUseBlock, OtherBlock])
export type ContentBlock = typeof ContentBlock.Type
export const isTextBlock = Schema.is(TextBlock)
export const isToolUseBlock = Schema.is(ToolUseBlock)

/** A non-streamed answer. */
export const AnthropicMessage = Schema.Struct({
  id: Schema.String,
  model: Schema.String,
  content: Schema.Array(ContentBlock),
  stop_reason: Schema.optionalKey(Schema.NullOr(Schema.String)),
  usage: Usage
})
export type AnthropicMessage = typeof AnthropicMessage.Type

/** The events of a streamed answer. */
export const AnthropicStreamEvent = Schema.Union([
  Schema.Struct({
    type: Schema.Literal("message_start"),
    message: Schema.Struct({ id: Schema.String, model: Schema.String, usage: Usage })
  }),
  Schema.Struct({ type: Schema.Literal("content_block_start"), index: Schema.Int, content_block: ContentBlock }),
  Schema.Struct({
    type: Schema.Literal("content_block_delta"),
    index: Schema.Int,
    delta: Schema.Struct({
      type: Schema.String,
      text: Schema.optionalKey(Schema.String),
      partial_json: Schema.optionalKey(Schema.String)
    })
  }),
  Schema.Struct({
    type: Schema.Literal("message_delta"),
    delta: Schema.Struct({ stop_reason: Schema.optionalKey(Schema.NullOr(Schema.String)) }),
    usage: Usage
  }),
  Schema.Struct({ type: Schema.Literal("message_stop") }),
  Schema.Struct({
    type: Schema.Literal("error"),
    error: Schema.Struct({ type: Schema.optionalKey(Schema.String), message: Schema.optionalKey(Schema.String) })
  })
])
export type AnthropicStreamEvent = typeof AnthropicStreamEvent.Type

/** `GET /v1/models`. */
export const AnthropicModelList = Schema.Struct({
  data: Schema.Array(Schema.Struct({ id: Schema.String, created_at: Schema.optionalKey(Schema.String) }))
})
export type AnthropicModelList = typeof AnthropicModelList.Type
