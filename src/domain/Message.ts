import { Schema } from "effect"

export const MessageRole = Schema.Literals(["system", "developer", "user", "assistant", "tool"])
export type MessageRole = typeof MessageRole.Type

export class Message extends Schema.Class<Message>("Message")({
  id: Schema.String,
  role: MessageRole,
  content: Schema.String,
  /** An assistant message's tool calls, in the OpenAI shape. */
  toolCalls: Schema.NullOr(Schema.Json),
  /** The call a `tool` message answers. */
  toolCallId: Schema.NullOr(Schema.String),
  /** The thread the turn was recorded in (`X-Service-Thread-Id`), if any. */
  threadId: Schema.NullOr(Schema.String),
  /** An answer's id as the client got it (`chatcmpl-…`, `resp_…`, `msg_…`): maps the provider's id to the turn. */
  answerId: Schema.NullOr(Schema.String),
  /** The answer broke off after it started (the provider's stream was cut): kept as far as it went, not learned from. */
  incomplete: Schema.Boolean,
  createdAt: Schema.DateTimeUtcFromDate
}) {}
