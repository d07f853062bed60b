import { Schema } from "effect"

/** A count of tokens: a whole number, never negative. */
export const TokenCount = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * The tokens a provider counted for one answer, whichever API it spoke: every input token (those
 * read from its prompt cache and those written to it included, as OpenAI counts them), the part of
 * them read from the cache, the part written to it (Anthropic's cache writes: input that was not
 * cached yet), the output, and the part of it spent reasoning (where the API says). Read from the answer once (`Provider.usage`, `providers/<name>/usage.ts`).
 */
export const TokenUsage = Schema.Struct({
  input: TokenCount,
  /** Of `input`, read from the provider's prompt cache. */
  cachedInput: TokenCount,
  /** Of `input`, written to the provider's prompt cache (uncached input, billed as such or more). */
  cacheWrite: TokenCount,
  output: TokenCount,
  /** Of `output`, spent on reasoning the answer does not show (OpenAI's `reasoning_tokens`; 0 where not given). */
  reasoning: TokenCount
}).check(
  Schema.makeFilter(
    (usage: { readonly input: number; readonly cachedInput: number; readonly cacheWrite: number }) =>
      usage.cachedInput + usage.cacheWrite <= usage.input,
    { expected: "cached and cache-write input within the input" }
  )
)
export type TokenUsage = typeof TokenUsage.Type

/** The input that did not come from the provider's cache (cache writes included). */
export const uncachedInput = (usage: TokenUsage): number => usage.input - usage.cachedInput
