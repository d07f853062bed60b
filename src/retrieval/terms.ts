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

/**
 * Capitalised words that are not names: greetings and words a sentence or a chat turn often starts
 * with, the calendar's names (times, not things), and the roles a memory is written about.
 */
const NOT_NAMES = new Set(
  (
    "hey hi hello thanks thank yeah yes yep no nope oh ah wow ok okay lol haha omg aw aww hmm sure well great cool " +
    "nice awesome sorry please user assistant monday tuesday wednesday thursday friday saturday sunday january " +
    "february march april june july august september october november december"
  ).split(" ")
)

/**
 * The terms of a text: English word stems (Porter, so "cooking" and "cooked" are "cook") and how
 * often each occurs, and the names it writes with a capital.
 */
export interface Terms {
  readonly counts: ReadonlyMap<string, number>
  /** How many terms the text has in all (its length for BM25). */
  readonly length: number
  /**
   * Stems of words written with a capital where a sentence does not start ("… with Caroline", "the
   * Eiffel Tower"): the names the text uses. A profile's names are those its memories write so.
   */
  readonly named: ReadonlyArray<string>
  /** The stem of the text's first word when it is written with a capital (who or what the memory is about: "Caroline: …", "Anna lives …"). */
  readonly first: string | undefined
}

const WORD = /[\p{L}\p{N}]+/gu
const CAPITAL = /^\p{Lu}/u
/** Between two words: where a sentence (or a speaker's turn, "Anna: …") starts again. */
const SENTENCE_BREAK = /[.!?:;\n]/

interface Analysis {
  readonly stems: Array<string>
  readonly named: Set<string>
  first: string | undefined
}

const analyse = (text: string, names: boolean): Analysis => {
  const slice = text.slice(0, MAX_CHARACTERS)
  const analysis: Analysis = { stems: [], named: new Set(), first: undefined }
  let sentenceStart = true
  let end = 0
  let words = 0
  for (const match of slice.matchAll(WORD)) {
    const original = match[0]
    if (names && SENTENCE_BREAK.test(slice.slice(end, match.index))) sentenceStart = true
    end = match.index + original.length
    const startsSentence = sentenceStart
    sentenceStart = false
    words++
    const word = original.toLowerCase()
    if (word.length < 2 || STOP_WORDS.has(word)) continue
    const stem = stemmer(word)
    analysis.stems.push(stem)
    if (!names || !CAPITAL.test(original) || NOT_NAMES.has(word)) continue
    if (words === 1) analysis.first = stem
    if (!startsSentence) analysis.named.add(stem)
  }
  return analysis
}

const stemsOf = (text: string): Array<string> => analyse(text, false).stems

/** A document's terms, computed in the process (no database round trip). */
export const termsOf = (text: string): Terms => {
  const counts = new Map<string, number>()
  const { stems, named, first } = analyse(text, true)
  for (const stem of stems) counts.set(stem, (counts.get(stem) ?? 0) + 1)
  return { counts, length: stems.length, named: [...named], first }
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
