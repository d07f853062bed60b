import { type Config, Context } from "effect"
import { positiveInt, section } from "../config/values.ts"

/** How much of the Conversations API's state the gateway keeps, per request and per user. */
export const conversationsFromEnv = section({
  /** The largest body a `/v1/conversations` call may send, in bytes (`CONVERSATION_MAX_REQUEST_BYTES`). */
  maxRequestBytes: positiveInt("CONVERSATION_MAX_REQUEST_BYTES", 1024 * 1024),
  /** How many conversations one user may keep (`CONVERSATIONS_MAX_PER_USER`). */
  maxPerUser: positiveInt("CONVERSATIONS_MAX_PER_USER", 1000),
  /** How many bytes of items and metadata one user's conversations may hold (`CONVERSATIONS_MAX_BYTES_PER_USER`). */
  maxBytesPerUser: positiveInt("CONVERSATIONS_MAX_BYTES_PER_USER", 64 * 1024 * 1024)
})

export type ConversationsSettings = Config.Success<typeof conversationsFromEnv>

export class ConversationsConfig extends Context.Service<ConversationsConfig, ConversationsSettings>()(
  "gateway/responses/ConversationsConfig"
) {}
