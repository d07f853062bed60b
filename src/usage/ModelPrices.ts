import { readFile } from "node:fs/promises"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { UsageConfig } from "./UsageConfig.ts"

const Price = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))

/** One model's prices, per million tokens; cached input and cache writes cost what input does unless given. */
export const ModelPrice = Schema.Struct({
  input: Price,
  cachedInput: Schema.optionalKey(Price),
  cacheWrite: Schema.optionalKey(Price),
  output: Price
})
export type ModelPrice = typeof ModelPrice.Type

/** `MODEL_PRICES`: `{"gpt-4o": {"input": 2.5, "cachedInput": 1.25, "output": 10}, …}`. */
const PricesFile = Schema.Record(Schema.String, ModelPrice)

/** `MODEL_PRICES` cannot be read or is not a price list: the gateway does not start. */
export class ModelPricesFileError extends Schema.TaggedError<ModelPricesFileError>()("ModelPricesFileError", {
  message: Schema.String
}) {}

/** Token figures to price. */
export interface PricedTokens {
  readonly input: number
  readonly cachedInput: number
  readonly cacheWrite: number
  readonly output: number
}

/**
 * The operator's prices (`MODEL_PRICES`), by the model name requests use. There is no built-in list:
 * it would go stale. A model without a price has no cost (`undefined`), never a guessed one.
 */
export class ModelPrices extends Context.Service<
  ModelPrices,
  {
    readonly known: boolean
    readonly cost: (model: string, tokens: PricedTokens) => number | undefined
  }
>()("gateway/usage/ModelPrices") {
  static readonly make = (prices: Readonly<Record<string, ModelPrice>>) => {
    const byModel = new Map(Object.entries(prices))
    return ModelPrices.of({
      known: byModel.size > 0,
      cost: (model, tokens) => {
        const price = byModel.get(model)
        if (price === undefined) return undefined
        const plainInput = tokens.input - tokens.cachedInput - tokens.cacheWrite
        return (
          (plainInput * price.input +
            tokens.cachedInput * (price.cachedInput ?? price.input) +
            tokens.cacheWrite * (price.cacheWrite ?? price.input) +
            tokens.output * price.output) /
          1_000_000
        )
      }
    })
  }

  static readonly layer = Layer.effect(
    ModelPrices,
    Effect.gen(function* () {
      const file = (yield* UsageConfig).pricesFile
      if (Option.isNone(file)) return ModelPrices.make({})
      const failed = (message: string) =>
        new ModelPricesFileError({ message: `MODEL_PRICES ${file.value}: ${message}` })
      const text = yield* Effect.tryPromise({
        try: () => readFile(file.value, "utf8"),
        catch: (cause) => failed(`cannot read (${String(cause)})`)
      })
      const prices = yield* Schema.decodeEffect(Schema.fromJsonString(PricesFile))(text).pipe(
        Effect.mapError((error) => failed(error.message))
      )
      return ModelPrices.make(prices)
    })
  )
}
