import { stemmer } from "stemmer"

/** Longest text taken into account (a long message's start says what it is about). */
const MAX_CHARACTERS = 2000

/** Words too common to say what a text is about. */
const STOP_WORDS = new Set(
  (
    "a about above after again against all am an and any are as at be because been before being below between both " +
    "but by can could did do does doing down during each few for from further had has have having he her here hers " +
    "herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off on " +
    "once only or other our ours ourselves out over own same she should so some such than that the their theirs them " +
    "themselves then there these they this those through to too under until up very was we were what when where which " +
    "while who whom why will with would you your yours yourself yourselves"
  ).split(" ")
)

/** The terms of a text: English word stems (Porter, so "cooking" and "cooked" are "cook") and how often each occurs. */
export interface Terms {
  readonly counts: ReadonlyMap<string, number>
  /** How many terms the text has in all (its length for BM25). */
  readonly length: number
}

const stemsOf = (text: string): Array<string> => {
  const stems: Array<string> = []
  for (const word of text
    .slice(0, MAX_CHARACTERS)
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)) {
    if (word.length < 2 || STOP_WORDS.has(word)) continue
    stems.push(stemmer(word))
  }
  return stems
}

/** A document's terms, computed in the process (no database round trip). */
export const termsOf = (text: string): Terms => {
  const counts = new Map<string, number>()
  const stems = stemsOf(text)
  for (const stem of stems) counts.set(stem, (counts.get(stem) ?? 0) + 1)
  return { counts, length: stems.length }
}

/** The distinct terms of a query, each of weight 1. */
export const queryTermsOf = (text: string): ReadonlyMap<string, number> => weightedTermsOf([{ text, weight: 1 }])

/** The distinct terms of several texts, each term with the largest weight of the texts it occurs in. */
export const weightedTermsOf = (
  texts: ReadonlyArray<{ readonly text: string; readonly weight: number }>
): ReadonlyMap<string, number> => {
  const terms = new Map<string, number>()
  for (const { text, weight } of texts) {
    if (weight <= 0) continue
    for (const stem of stemsOf(text)) terms.set(stem, Math.max(weight, terms.get(stem) ?? 0))
  }
  return terms
}
