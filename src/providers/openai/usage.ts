import { Schema, SchemaGetter } from "effect"
import { TokenCount, TokenUsage } from "../../domain/TokenUsage.ts"
import { OptionalCount, type UsageReader, usageReader } from "../usage.ts"

const CachedDetails = Schema.optionalKey(Schema.NullOr(Schema.Struct({ cached_tokens: OptionalCount })))
const ReasoningDetails = Schema.optionalKey(Schema.NullOr(Schema.Struct({ reasoning_tokens: OptionalCount })))

/**
 * Chat Completions: `prompt_tokens` (cached included), `prompt_tokens_details.cached_tokens`,
 * `completion_tokens` (reasoning included), `completion_tokens_details.reasoning_tokens`.
 */
const ChatUsage = Schema.Struct({
  prompt_tokens: TokenCount,
  prompt_tokens_details: CachedDetails,
  completion_tokens: TokenCount,
  completion_tokens_details: ReasoningDetails
}).pipe(
  Schema.decodeTo(TokenUsage, {
    decode: SchemaGetter.transform((usage) => ({
      input: usage.prompt_tokens,
      cachedInput: usage.prompt_tokens_details?.cached_tokens ?? 0,
      cacheWrite: 0,
      output: usage.completion_tokens,
      reasoning: usage.completion_tokens_details?.reasoning_tokens ?? 0
    })),
    encode: SchemaGetter.transform((usage) => ({
      prompt_tokens: usage.input,
      prompt_tokens_details: { cached_tokens: usage.cachedInput },
      completion_tokens: usage.output,
      completion_tokens_details: { reasoning_tokens: usage.reasoning }
    }))
  })
)

/**
 * Responses: `input_tokens` (cached included), `input_tokens_details.cached_tokens`, `output_tokens`
 * (reasoning included), `output_tokens_details.reasoning_tokens`.
 */
const ResponsesUsage = Schema.Struct({
  input_tokens: TokenCount,
  input_tokens_details: CachedDetails,
  output_tokens: TokenCount,
  output_tokens_details: ReasoningDetails
}).pipe(
  Schema.decodeTo(TokenUsage, {
    decode: SchemaGetter.transform((usage) => ({
      input: usage.input_tokens,
      cachedInput: usage.input_tokens_details?.cached_tokens ?? 0,
      cacheWrite: 0,
      output: usage.output_tokens,
      reasoning: usage.output_tokens_details?.reasoning_tokens ?? 0
    })),
    encode: SchemaGetter.transform((usage) => ({
      input_tokens: usage.input,
      input_tokens_details: { cached_tokens: usage.cachedInput },
      output_tokens: usage.output,
      output_tokens_details: { reasoning_tokens: usage.reasoning }
    }))
  })
)

export const chatCompletionsUsage: UsageReader = usageReader(ChatUsage)
export const responsesUsage: UsageReader = usageReader(ResponsesUsage)
