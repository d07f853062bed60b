import { Option, Predicate, Schema } from "effect"
import { TokenCount, type TokenUsage } from "../domain/TokenUsage.ts"

/**
 * The token usage each API's answers carry, as the one `TokenUsage`: read once per answer, where the
 * answer is read (a whole body in `Upstream`, a stream by its reader), for the provider call's span
 * and the metrics alike. A usage with a figure that is missing, negative, fractional or not a
 * number, or whose cached part exceeds its input, is no usage: nothing is counted, and the answer
 * goes on as it came.
 */
export type UsageReader = (usage: unknown) => TokenUsage | undefined

/** A figure an API may leave out or send as `null`. */
export const OptionalCount = Schema.optionalKey(Schema.NullOr(TokenCount))

/** The reader of a usage in the shape `schema` decodes (each provider's: `providers/<name>/usage.ts`). */
export const usageReader =
  <S extends Schema.Codec<TokenUsage, unknown>>(schema: S): UsageReader =>
  (usage) =>
    Option.getOrUndefined(Schema.decodeUnknownOption(schema)(usage))

/** A whole answer's JSON, parsed once for everything that reads it (`undefined`: not JSON). */
export const parseAnswer = (body: Uint8Array): unknown => {
  try {
    return JSON.parse(new TextDecoder().decode(body))
  } catch {
    return undefined
  }
}

/**
 * The model that answered and the usage of a whole answer (parsed), read by `read`: the provider's reader
 * of the path called (`Provider.usage`); either none: the answer does not say.
 */
export const readAnswerBody = (
  read: UsageReader | undefined,
  answer: unknown
): { readonly model: string | undefined; readonly usage: TokenUsage | undefined } => {
  if (!Predicate.isObject(answer)) return { model: undefined, usage: undefined }
  const { model, usage } = answer
  return {
    model: typeof model === "string" ? model : undefined,
    usage: usage == null || read === undefined ? undefined : read(usage)
  }
}
