import { type TimeWindow, timeWindowOf } from "./timeWindow.ts"

/**
 * What a text says about time, in both directions: a memory that names when something happened
 * ("yesterday", "for 3 years", "next month", "on 12 May") is the likelier answer to a question
 * that asks when; a question that asks when ("When did…", "How long…", "What year…") wants one.
 */

const MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
const WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
const UNITS = "days?|weeks?|weekends?|months?|years?|nights?|mornings?|evenings?"

const STATES_TIME = new RegExp(
  [
    "\\b(?:yesterday|today|tonight|tomorrow|recently|lately|nowadays|earlier|the other (?:day|night|week))\\b",
    `\\b(?:last|next|this|past|coming|previous|following) (?:${UNITS}|${WEEKDAYS}|spring|summer|autumn|fall|winter)\\b`,
    `\\b(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of|several|\\d+) (?:${UNITS}) (?:ago|now|later|before|after)\\b`,
    `\\bfor (?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|several|\\d+) (?:${UNITS})\\b`,
    `\\b(?:since|in|on|during|until|by) (?:${MONTHS}|${WEEKDAYS}|(?:19|20)\\d{2})\\b`,
    `\\b(?:${MONTHS}) \\d{1,2}\\b|\\b\\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:${MONTHS})\\b|\\b\\d{4}-\\d{2}-\\d{2}\\b`,
    "\\b(?:when i was|as a (?:kid|child|teen))\\b"
  ].join("|")
)

const ASKS_TIME =
  /\b(?:when|how long|how often|what (?:year|month|day|date|time|age)|which (?:year|month|day|date)|how many (?:days|weeks|months|years|times)|how old)\b/

/** The text names a time: when something happened, will happen, or for how long. */
export const statesTime = (text: string): boolean => STATES_TIME.test(text.slice(0, 2000).toLowerCase())

/** The question asks when, how long or how often. */
export const asksTime = (text: string): boolean => ASKS_TIME.test(text.slice(0, 2000).toLowerCase())

/**
 * The period a memory's text names, read from when it was said ("yesterday I went bowling" said on
 * 17 March is 16 March): an event is often remembered a day or a week after it happened.
 */
export const mentionedWindow = (text: string, saidAt: number): TimeWindow | undefined => timeWindowOf(text, saidAt)
