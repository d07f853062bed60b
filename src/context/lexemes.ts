import { stemmer } from "stemmer"

/** Longest text taken into account (the latest user message can be long; its start says what it is about). */
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

/**
 * The English lexemes of a text: its words, lower-cased, without stop words, reduced to their stem
 * (Porter), so "cooking" and "cooked" match "cook". Computed in the process, no database round trip.
 */
export const lexemesOf = (text: string): ReadonlySet<string> => {
  const lexemes = new Set<string>()
  for (const word of text.slice(0, MAX_CHARACTERS).toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (word.length < 2 || STOP_WORDS.has(word)) continue
    lexemes.add(stemmer(word))
  }
  return lexemes
}
