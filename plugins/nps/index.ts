import { Effect } from "effect"
import type { TraitDefinition } from "../../src/domain/TraitDefinition.ts"
import { definePlugin, type ExtractContribution } from "../../src/plugins/Plugin.ts"

/** A score the user gave, and how sure the wording makes us. */
interface Score {
  readonly score: number
  readonly confidence: number
}

const OUT_OF_TEN = /\b(10|[0-9])\s*(?:\/|out of)\s*10\b/i
const GIVE_OR_RATE =
  /\b(?:give|gave|rate|rating|score|scored)\b[^.!?\d]{0,30}?\b(10|[0-9])\b(?!\s*(?:%|percent|\/\s*[1-9]\d))/i

/** Finds an NPS-style score (0–10) in what the user said: "9/10", "9 out of 10", "I'd give you a 9". */
export const findScore = (text: string): Score | undefined => {
  const explicit = OUT_OF_TEN.exec(text)
  if (explicit !== null) return { score: Number(explicit[1]), confidence: 0.9 }
  const phrased = GIVE_OR_RATE.exec(text)
  if (phrased !== null) return { score: Number(phrased[1]), confidence: 0.75 }
  return undefined
}

/** The Net Promoter Score groups: 9–10 promoter, 7–8 passive, 0–6 detractor. */
export const categoryOf = (score: number) => (score >= 9 ? "promoter" : score >= 7 ? "passive" : "detractor")

const valueFor = (definition: TraitDefinition, score: number): unknown =>
  definition.valueType === "number" ? score : categoryOf(score)

/**
 * Rule-based NPS extraction, no model call: for every trait declared with `"behaviour": "nps"`
 * (enum/string traits get promoter/passive/detractor, number traits the score itself) it reads the
 * latest score the user gave in the turn, and remembers the rating as an event.
 */
export default definePlugin({
  name: "nps",
  hooks: {
    extract: (context) =>
      Effect.sync((): ExtractContribution => {
        if (context.assigned.length === 0) return {}
        const said = context.messages.filter((message) => message.role === "user").map((message) => message.content)
        const found = said
          .map(findScore)
          .filter((score): score is Score => score !== undefined)
          .at(-1)
        if (found === undefined) return {}
        return {
          traits: context.assigned.map((definition) => ({
            key: definition.key,
            value: valueFor(definition, found.score),
            confidence: found.confidence
          })),
          memories: [
            {
              content: `The user rated the product ${found.score} out of 10 (${categoryOf(found.score)})`,
              type: "event",
              importance: 0.6
            }
          ]
        }
      })
  }
})
