import { Schema, SchemaGetter } from "effect"
import { TokenCount, TokenUsage } from "../../domain/TokenUsage.ts"
import { OptionalCount, type UsageReader, usageReader } from "../usage.ts"

/**
 * Anthropic Messages: `input_tokens` is the input after the last cache breakpoint only; the input
 * read from the cache (`cache_read_input_tokens`) and written to it (`cache_creation_input_tokens`)
 * come on top.
 */
const MessagesUsage = Schema.Struct({
  input_tokens: TokenCount,
  cache_read_input_tokens: OptionalCount,
  cache_creation_input_tokens: OptionalCount,
  output_tokens: TokenCount
}).pipe(
  Schema.decodeTo(TokenUsage, {
    decode: SchemaGetter.transform((usage) => {
      const read = usage.cache_read_input_tokens ?? 0
      const written = usage.cache_creation_input_tokens ?? 0
      return {
        input: usage.input_tokens + read + written,
        cachedInput: read,
        cacheWrite: written,
        output: usage.output_tokens,
        // Anthropic's output counts thinking without saying how much of it.
        reasoning: 0
      }
    }),
    encode: SchemaGetter.transform((usage) => ({
      input_tokens: usage.input - usage.cachedInput - usage.cacheWrite,
      cache_read_input_tokens: usage.cachedInput,
      cache_creation_input_tokens: usage.cacheWrite,
      output_tokens: usage.output
    }))
  })
)

/** A Messages usage: for a stream, `message_start`'s figures with `message_delta`'s over them. */
export const messagesUsage: UsageReader = usageReader(MessagesUsage)
