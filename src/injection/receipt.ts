import { Schema } from "effect"

/**
 * What was injected, as the caller reads it in the `X-Service-Context` header and the console's
 * preview shows it: the one wire shape of a rendered block's receipt.
 */
export const RenderedReceipt = Schema.Struct({
  profileId: Schema.String,
  summary: Schema.Boolean,
  /** Keys of the traits injected. */
  traits: Schema.Array(Schema.String),
  /** Ids of the memories injected. */
  memories: Schema.Array(Schema.String),
  /** Plugins whose sections made it into the block. */
  plugins: Schema.Array(Schema.String),
  estimatedTokens: Schema.Number,
  /** How the memories were chosen: `all`, `fused` or `keyword`. */
  retrieval: Schema.String,
  /** Why the ranking went without the message's vector, when it did. */
  semantic: Schema.optionalKey(Schema.String)
})
export type RenderedReceipt = typeof RenderedReceipt.Type
