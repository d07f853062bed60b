import { Option, Predicate, Schema, SchemaGetter } from "effect"
import { TokenCount, TokenUsage } from "../domain/TokenUsage.ts"

/**
 * The token usage each API's answers carry, as the one `TokenUsage`: read once per answer, where the
 * answer is read (a whole body in `Upstream`, a stream by its reader), for the provider call's span
 * and the metrics alike. A usage with a figure that is missing, negative, fractional or not a
 * number, or whose cached part exceeds its input, is no usage: nothing is counted, and the answer
 * goes on as it came.
 */
export type UsageReader = (usage: unknown) => TokenUsage | undefined

const Optional = Schema.optionalKey(Schema.NullOr(TokenCount))
const CachedDetails = Schema.optionalKey(Schema.NullOr(Schema.Struct({ cached_tokens: Optional })))

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

/**
 * Anthropic Messages: `input_tokens` is the input after the last cache breakpoint only; the input
 * read from the cache (`cache_read_input_tokens`) and written to it (`cache_creation_input_tokens`)
 * come on top.
 */
const MessagesUsage = Schema.Struct({
  input_tokens: TokenCount,
  cache_read_input_tokens: Optional,
  cache_creation_input_tokens: Optional,
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
        output: usage.output_tokens
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

const reader =
  <S extends Schema.Codec<TokenUsage, unknown>>(schema: S): UsageReader =>
  (usage) =>
    Option.getOrUndefined(Schema.decodeUnknownOption(schema)(usage))

export const chatCompletionsUsage: UsageReader = reader(ChatUsage)
export const responsesUsage: UsageReader = reader(ResponsesUsage)
/** A Messages usage: for a stream, `message_start`'s figures with `message_delta`'s over them. */
export const messagesUsage: UsageReader = reader(MessagesUsage)

/** The reader of the usage of the API a provider's path serves (the gateway's own paths, never a client's). */
const readersByPath: Readonly<Record<string, UsageReader>> = {
  "/chat/completions": chatCompletionsUsage,
  "/responses": responsesUsage,
  "/messages": messagesUsage
}

/** A whole answer's JSON, parsed once for everything that reads it (`undefined`: not JSON). */
export const parseAnswer = (body: Uint8Array): unknown => {
  try {
    return JSON.parse(new TextDecoder().decode(body))
  } catch {
    return undefined
  }
}

/** The model that answered and the usage of a whole answer (parsed) from `path` (either none: the answer does not say). */
export const readAnswerBody = (
  path: string,
  answer: unknown
): { readonly model: string | undefined; readonly usage: TokenUsage | undefined } => {
  if (!Predicate.isObject(answer)) return { model: undefined, usage: undefined }
  const { model, usage } = answer
  const read = readersByPath[path]
  return {
    model: typeof model === "string" ? model : undefined,
    usage: usage == null || read === undefined ? undefined : read(usage)
  }
}
