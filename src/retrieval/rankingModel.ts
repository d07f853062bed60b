import { Schema } from "effect"
import { type BoostedTrees, BoostedTreesFile, boostedTreesOf } from "./boostedTrees.ts"
import { FEATURES, type FeatureName } from "./featureSet.ts"

/**
 * The fitted ranking model as shipped in `rankingModel.json` (written by `npm run fit:ranking`):
 * logistic regressions over the features of `rankingFeatures.ts`, so a memory's score is the
 * probability that it answers the message,
 *
 *   p = 1 / (1 + e^−(intercept + Σ coefficient[f] × feature[f] + trees))
 *
 * one for a query with a vector and one for a query without (each calibrated for when it is used),
 * and a memory is injected when p ≥ `relevanceFloor`. The trees (`boostedTrees.ts`) add to the logit
 * of the memories the weighted sum ranks first.
 */
const Coefficients = Schema.Struct({
  intercept: Schema.Finite,
  coefficients: Schema.Struct(
    Object.fromEntries(FEATURES.map((name) => [name, Schema.Finite])) as {
      readonly [K in FeatureName]: typeof Schema.Finite
    }
  ),
  trees: Schema.optionalKey(BoostedTreesFile)
})

export const RankingModelFile = Schema.Struct({
  version: Schema.Literal(1),
  fittedOn: Schema.String,
  embedding: Schema.String,
  withVectors: Coefficients,
  keywordsOnly: Coefficients,
  relevanceFloor: Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 })),
  /** Injection keeps a memory only while its probability reaches this share of the best one's. */
  relativeFloor: Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))
})
export type RankingModelFile = typeof RankingModelFile.Type

/**
 * The keyword-only probability of the best memory from which a query's vector is not waited for
 * (`Retrieval.ts`): the largest that skips more than half of LoCoMo's tuning questions (56%; a
 * request's median latency is then one that does not wait), for 0.7 points of their recall@5 and none
 * of our set's. `npm run fit:ranking` shows its cost in its `gateway` rows.
 */
export const KEYWORDS_CONFIDENT = 0.4

export interface Scorer {
  readonly intercept: number
  /** Coefficients in `FEATURES` order. */
  readonly weights: Float64Array
  readonly trees: BoostedTrees
}

export interface RankingModel {
  readonly withVectors: Scorer
  readonly keywordsOnly: Scorer
  /** The probability a memory needs to be injected. */
  readonly relevanceFloor: number
  /** The floor as a logit (what the weighted sum must reach). */
  readonly floorLogit: number
  /** `RankingModelFile.relativeFloor`. */
  readonly relativeFloor: number
}

export const logitOf = (p: number): number => Math.log(p / (1 - p))

const scorerOf = (coefficients: typeof Coefficients.Type): Scorer => ({
  intercept: coefficients.intercept,
  weights: Float64Array.from(FEATURES, (name) => coefficients.coefficients[name]),
  trees: boostedTreesOf(coefficients.trees)
})

export const rankingModelOf = (file: RankingModelFile, relevanceFloor = file.relevanceFloor): RankingModel => ({
  withVectors: scorerOf(file.withVectors),
  keywordsOnly: scorerOf(file.keywordsOnly),
  relevanceFloor,
  floorLogit: relevanceFloor <= 0 ? -Infinity : relevanceFloor >= 1 ? Infinity : logitOf(relevanceFloor),
  relativeFloor: file.relativeFloor
})

/** The weighted sum of a memory's features. */
export const logitFor = (model: Scorer, features: Float64Array): number => {
  // The length read once: below the optimizing compiler's tier, each read of a typed array's length is a call.
  const { weights } = model
  const count = weights.length
  let t = model.intercept
  for (let j = 0; j < count; j++) t += weights[j]! * features[j]!
  return t
}

export const probabilityOf = (logit: number): number =>
  logit >= 0 ? 1 / (1 + Math.exp(-logit)) : Math.exp(logit) / (1 + Math.exp(logit))
