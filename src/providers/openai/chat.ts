import { Schema } from "effect"

/**
 * The OpenAI Chat Completions wire format, as far as the gateway reads or writes it. Decoding
 * keeps only these fields; what a request carries beyond them is forwarded as sent, never rebuilt.
 */

/** A part of a message's content: text, or another kind (`image_url`, `input_audio`, `file`, …) kept as is. */
export const ContentPart = Schema.Struct({
  type: Schema.String,
  text: Schema.optionalKey(Schema.String),
  image_url: Schema.optionalKey(Schema.Union([Schema.String, Schema.Struct({ url: Schema.String })])),
  /** A `file` part's `{file_data, filename}`: read by `mediaParts.ts`, never checked here (it goes as sent). */
  file: Schema.optionalKey(Schema.Unknown)
})
export type ContentPart = typeof ContentPart.Type

export const MessageContent = Schema.NullOr(Schema.Union([Schema.String, Schema.Array(ContentPart)]))
export type MessageContent = typeof MessageContent.Type

export const ToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.optionalKey(Schema.String),
  function: Schema.Struct({ name: Schema.String, arguments: Schema.String })
})
export type ToolCall = typeof ToolCall.Type

export const ChatMessage = Schema.Struct({
  role: Schema.NonEmptyString,
  content: Schema.optionalKey(MessageContent),
  tool_calls: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.Unknown))),
  tool_call_id: Schema.optionalKey(Schema.NullOr(Schema.String))
})
/** A message as the client sent it: the fields above, and whatever else it carries. */
export type ChatMessage = typeof ChatMessage.Type & { readonly [field: string]: unknown }

/** The fields of `POST /v1/chat/completions` the gateway reads (its own `service` aside: `apis/ServiceOptions.ts`). */
export const ChatCompletionRequest = Schema.Struct({
  model: Schema.NonEmptyString,
  messages: Schema.Array(ChatMessage).check(Schema.isMinLength(1)),
  stream: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  stream_options: Schema.optionalKey(
    Schema.NullOr(
      Schema.Struct({
        include_usage: Schema.optionalKey(Schema.NullOr(Schema.Boolean))
      })
    )
  ),
  /** OpenAI's successor of `user`: a stable id of the app's end user. */
  safety_identifier: Schema.optionalKey(Schema.String),
  user: Schema.optionalKey(Schema.String),
  metadata: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)))
})

export const Usage = Schema.Struct({
  prompt_tokens: Schema.Finite,
  completion_tokens: Schema.Finite,
  total_tokens: Schema.Finite,
  prompt_tokens_details: Schema.optionalKey(Schema.Struct({ cached_tokens: Schema.optionalKey(Schema.Finite) }))
})
export type Usage = typeof Usage.Type

/** A non-streamed answer (`chat.completion`). */
export const ChatCompletion = Schema.Struct({
  id: Schema.optionalKey(Schema.String),
  object: Schema.optionalKey(Schema.String),
  created: Schema.optionalKey(Schema.Finite),
  model: Schema.optionalKey(Schema.String),
  choices: Schema.Array(
    Schema.Struct({
      index: Schema.optionalKey(Schema.Int),
      message: Schema.Struct({
        role: Schema.optionalKey(Schema.String),
        content: Schema.optionalKey(MessageContent),
        refusal: Schema.optionalKey(Schema.NullOr(Schema.String)),
        tool_calls: Schema.optionalKey(Schema.NullOr(Schema.Array(ToolCall)))
      }),
      finish_reason: Schema.optionalKey(Schema.NullOr(Schema.String)),
      logprobs: Schema.optionalKey(Schema.Unknown)
    })
  ),
  usage: Schema.optionalKey(Schema.NullOr(Usage))
})
export type ChatCompletion = typeof ChatCompletion.Type

/** A piece of a tool call in a stream: the first names it, the rest append to its arguments. */
export const ToolCallDelta = Schema.Struct({
  index: Schema.optionalKey(Schema.Int),
  id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  type: Schema.optionalKey(Schema.NullOr(Schema.String)),
  function: Schema.optionalKey(
    Schema.NullOr(
      Schema.Struct({
        name: Schema.optionalKey(Schema.NullOr(Schema.String)),
        arguments: Schema.optionalKey(Schema.NullOr(Schema.String))
      })
    )
  )
})

/** One event of a streamed answer (`chat.completion.chunk`). */
export const ChatCompletionChunk = Schema.Struct({
  id: Schema.optionalKey(Schema.String),
  object: Schema.optionalKey(Schema.String),
  created: Schema.optionalKey(Schema.Finite),
  model: Schema.optionalKey(Schema.String),
  choices: Schema.Array(
    Schema.Struct({
      index: Schema.optionalKey(Schema.Int),
      delta: Schema.optionalKey(
        Schema.NullOr(
          Schema.Struct({
            role: Schema.optionalKey(Schema.NullOr(Schema.String)),
            content: Schema.optionalKey(Schema.NullOr(Schema.String)),
            refusal: Schema.optionalKey(Schema.NullOr(Schema.String)),
            tool_calls: Schema.optionalKey(Schema.NullOr(Schema.Array(ToolCallDelta)))
          })
        )
      ),
      finish_reason: Schema.optionalKey(Schema.NullOr(Schema.String)),
      logprobs: Schema.optionalKey(Schema.Unknown)
    })
  ),
  usage: Schema.optionalKey(Schema.NullOr(Usage))
})
export type ChatCompletionChunk = typeof ChatCompletionChunk.Type

/** `GET /v1/models`. */
export const ModelList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(
    Schema.Struct({
      id: Schema.String,
      object: Schema.Literal("model"),
      created: Schema.Finite,
      owned_by: Schema.String
    })
  )
})
export type ModelList = typeof ModelList.Type
