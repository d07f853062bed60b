import { Schema, SchemaGetter } from "effect"
import { TokenCount, TokenUsage } from "../../domain/TokenUsage.ts"
import { OptionalCount, type UsageReader, usageReader } from "../usage.ts"

const CachedDetails = Schema.optionalKey(Schema.NullOr(Schema.Struct({ cached_tokens: OptionalCount })))

/** Chat Completions: `prompt_tokens` (cached included), `prompt_tokens_details.cached_tokens`, `completion_tokens`. */
const ChatUsage = Schema.Struct({
  prompt_tokens: TokenCount,
  prompt_tokens_details: CachedDetails,
  completion_tokens: TokenCount
}).pipe(
  Schema.decodeTo(TokenUsage, {
    decode: SchemaGetter.transform((usage) => ({
      input: usage.prompt_tokens,
      cachedInput: usage.prompt_tokens_details?.cached_tokens ?? 0,
      cacheWrite: 0,
      output: usage.completion_tokens
    })),
    encode: SchemaGetter.transform((usage) => ({
      prompt_tokens: usage.input,
      prompt_tokens_details: { cached_tokens: usage.cachedInput },
      completion_tokens: usage.output
    }))
  })
)

/** Responses: `input_tokens` (cached included), `input_tokens_details.cached_tokens`, `output_tokens`. */
const ResponsesUsage = Schema.Struct({
  input_tokens: TokenCount,
  input_tokens_details: CachedDetails,
  output_tokens: TokenCount
}).pipe(
  Schema.decodeTo(TokenUsage, {
    decode: SchemaGetter.transform((usage) => ({
      input: usage.input_tokens,
      cachedInput: usage.input_tokens_details?.cached_tokens ?? 0,
      cacheWrite: 0,
      output: usage.output_tokens
    })),
    encode: SchemaGetter.transform((usage) => ({
      input_tokens: usage.input,
      input_tokens_details: { cached_tokens: usage.cachedInput },
      output_tokens: usage.output
    }))
  })
)

export const chatCompletionsUsage: UsageReader = usageReader(ChatUsage)
export const responsesUsage: UsageReader = usageReader(ResponsesUsage)
