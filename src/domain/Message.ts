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
  createdAt: Schema.DateTimeUtcFromDate
}) {}
