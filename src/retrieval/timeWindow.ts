/**
 * The period a message asks about, read from English phrases ("yesterday", "three days ago",
 * "last week", "in March", "last weekend", "2026-03-14"), relative to when the message is sent.
 * Days are UTC days widened by half a day on each side (the user's time zone is not known); the
 * rolling and calendar readings of "last week" / "last month" are both covered.
 */
export interface TimeWindow {
  readonly start: number
  readonly end: number
  /** The phrase that set it, for the search endpoint's explanation. */
  readonly phrase: string
}

/**
 * How much being in the window says about a memory: all for a day or a week ("yesterday",
 * "last week"), less for a month, little for a year ("this year" is as often "currently").
 */
export const specificityOf = (window: TimeWindow): number => {
  const days = (window.end - window.start) / DAY
  return days <= 16 ? 1 : days <= 65 ? 0.6 : 0.25
}

const HOUR = 3_600_000
const DAY = 24 * HOUR
const MARGIN = 12 * HOUR

const MONTHS = [
  "january",
  "february",
  "march",
  "april",
  "may",
  "june",
  "july",
  "august",
  "september",
  "october",
  "november",
  "december"
]
const MONTH_PATTERN = `(${MONTHS.join("|")}|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)`
const WEEKDAYS = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
const NUMBERS: Record<string, number> = {
  a: 1,
  an: 1,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  "a couple of": 2,
  "a couple": 2,
  couple: 2,
  "a few": 3,
  few: 3,
  several: 4
}
const NUMBER_PATTERN =
  "(\\d{1,3}|a couple of|a couple|a few|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"

const startOfDay = (t: number) => Math.floor(t / DAY) * DAY
const monthIndex = (name: string) => MONTHS.findIndex((month) => month.startsWith(name.slice(0, 3)))
const monthStart = (year: number, month: number) => Date.UTC(year, month, 1)

/** Days as a window: from the start of the first to the end of the last, plus the margin. */
const days = (first: number, last: number, phrase: string): TimeWindow => ({
  start: startOfDay(first) - MARGIN,
  end: startOfDay(last) + DAY + MARGIN,
  phrase
})

const span = (start: number, end: number, phrase: string): TimeWindow => ({ start, end, phrase })

const union = (a: TimeWindow, b: TimeWindow): TimeWindow => ({
  start: Math.min(a.start, b.start),
  end: Math.max(a.end, b.end),
  phrase: a.phrase
})

/** Monday 00:00 UTC of the week of `t`. */
const startOfWeek = (t: number) => {
  const day = startOfDay(t)
  return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY
}

/** The most recent past (or current) occurrence of a month, whole. */
const pastMonth = (month: number, year: number | undefined, now: number, phrase: string): TimeWindow => {
  const today = new Date(now)
  const y = year ?? (month > today.getUTCMonth() ? today.getUTCFullYear() - 1 : today.getUTCFullYear())
  return span(monthStart(y, month) - MARGIN, monthStart(y, month + 1) + MARGIN, phrase)
}

/** A month's day of a year, or its latest occurrence up to today; undefined when there is no such day. */
const pastDay = (month: number, day: number, year: string | undefined, now: number): number | undefined => {
  if (day < 1 || day > 31) return undefined
  const thisYear = new Date(now).getUTCFullYear()
  let at = Date.UTC(year === undefined ? thisYear : Number(year), month, day)
  if (year === undefined && at > now + DAY) at = Date.UTC(thisYear - 1, month, day)
  // "February 30" rolls into March: not a day.
  return new Date(at).getUTCDate() === day ? at : undefined
}

const ago = (amount: number, unit: string, now: number, phrase: string): TimeWindow => {
  if (unit.startsWith("day")) return days(now - amount * DAY - DAY, now - amount * DAY + DAY, phrase)
  if (unit.startsWith("week")) return days(now - (amount * 7 + 4) * DAY, now - (amount * 7 - 4) * DAY, phrase)
  if (unit.startsWith("month")) return days(now - (amount * 30 + 15) * DAY, now - (amount * 30 - 15) * DAY, phrase)
  return days(now - (amount * 365 + 183) * DAY, now - (amount * 365 - 183) * DAY, phrase)
}

const SEASONS: Record<string, readonly [number, number]> = {
  spring: [2, 5],
  summer: [5, 8],
  autumn: [8, 11],
  fall: [8, 11],
  winter: [11, 14]
}

const ORDINAL_WEEKS: Record<string, number> = { first: 0, second: 1, third: 2, fourth: 3 }
/** Days of a month that "early", "mid" and "late" (or "the beginning of", "the middle of", "the end of") name, overlapping. */
const MONTH_PARTS: Record<string, readonly [number, number]> = {
  early: [1, 12],
  beginning: [1, 12],
  start: [1, 12],
  mid: [8, 22],
  middle: [8, 22],
  late: [18, 31],
  end: [18, 31]
}

// Built once: they are tried on every message and every memory that names a time.
const WEEK_OF_MONTH = new RegExp(
  `\\b(first|second|third|fourth|last) (?:week|weekend) of ${MONTH_PATTERN}(?:,? (\\d{4}))?\\b`
)
const PART_OF_MONTH = new RegExp(
  `\\b(?:the (beginning|start|middle|end) of |(early|mid|late)[- ])${MONTH_PATTERN}(?:,? (\\d{4}))?\\b`
)
const SEASON_OF_YEAR = /\b(spring|summer|autumn|fall|winter),? (?:of )?(20\d{2}|19\d{2})\b/

/**
 * A part of a named month ("the second week of November", "the last week of August 2023", "early
 * June", "the end of May") or a season of a year ("the summer of 2022"). Found before the relative
 * phrases, so "the last week of August" is not last week.
 */
const partOfMonthOf = (t: string, now: number): TimeWindow | undefined => {
  let m: RegExpExecArray | null
  const monthOf = (name: string, year: string | undefined) =>
    pastMonth(monthIndex(name), year === undefined ? undefined : Number(year), now, "")
  // The days `first`..`last` of the month a window covers (its margins taken off), clipped to the month.
  const daysOf = (month: TimeWindow, first: number, last: number, phrase: string) => {
    const start = month.start + MARGIN
    const end = month.end - MARGIN
    return days(start + (first - 1) * DAY, Math.min(end - DAY, start + (last - 1) * DAY), phrase)
  }
  if ((m = WEEK_OF_MONTH.exec(t)) !== null) {
    const month = monthOf(m[2]!, m[3])
    if (m[1] === "last") {
      const end = month.end - MARGIN
      return days(end - 7 * DAY, end - DAY, m[0])
    }
    const week = ORDINAL_WEEKS[m[1]!]!
    return daysOf(month, 1 + 7 * week, 7 + 7 * week, m[0])
  }
  if ((m = PART_OF_MONTH.exec(t)) !== null) {
    const [first, last] = MONTH_PARTS[m[1] ?? m[2]!]!
    return daysOf(monthOf(m[3]!, m[4]), first, last, m[0])
  }
  if ((m = SEASON_OF_YEAR.exec(t)) !== null) {
    const [from, to] = SEASONS[m[1]!]!
    const y = Number(m[2])
    return span(monthStart(y, from) - MARGIN, monthStart(y, to) + MARGIN, m[0])
  }
  return undefined
}

/** The period the text refers to, if it names one. The first phrase found wins. */
export const timeWindowOf = (text: string, now: number): TimeWindow | undefined => {
  // "as of May 2023" is when the question stands, not the period it asks about.
  const t = text
    .slice(0, 2000)
    .toLowerCase()
    .replace(/[’']/g, "'")
    .replace(/\bas of [^,.;?!]*/g, "")
  const today = new Date(now)
  const year = today.getUTCFullYear()
  let m: RegExpExecArray | null

  if ((m = /\b(\d{4})-(\d{2})-(\d{2})\b/.exec(t)) !== null) {
    const at = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))
    if (!Number.isNaN(at)) return days(at, at, m[0])
  }
  // A calendar day: "October 24, 2023", "March 16th", "8 May 2023" (without a year, its latest past date).
  // "may 2" alone is more often the verb.
  if (
    ((m = new RegExp(`\\b${MONTH_PATTERN}\\.? (\\d{1,2})(st|nd|rd|th)?\\b(?:,? (\\d{4}))?`).exec(t)) !== null &&
      (m[1] !== "may" || m[3] !== undefined || m[4] !== undefined)) ||
    (m = new RegExp(`\\b(\\d{1,2})(?:st|nd|rd|th)? (?:of )?${MONTH_PATTERN}\\b(?:,? (\\d{4}))?`).exec(t)) !== null
  ) {
    const dayFirst = /^\d/.test(m[1]!)
    const year = dayFirst ? m[3] : m[4]
    const at = pastDay(monthIndex(dayFirst ? m[2]! : m[1]!), Number(dayFirst ? m[1] : m[2]), year, now)
    if (at !== undefined) return days(at, at, m[0])
  }
  const partOfMonth = partOfMonthOf(t, now)
  if (partOfMonth !== undefined) return partOfMonth
  if ((m = /\bthe day before yesterday\b/.exec(t)) !== null) return days(now - 2 * DAY, now - 2 * DAY, m[0])
  if ((m = /\b(yesterday|last night)\b/.exec(t)) !== null) return days(now - DAY, now - DAY, m[0])
  if ((m = /\b(today|this morning|this afternoon|this evening|tonight|earlier today)\b/.exec(t)) !== null) {
    return days(now, now, m[0])
  }
  if ((m = new RegExp(`\\b${NUMBER_PATTERN} (day|week|month|year)s? ago\\b`).exec(t)) !== null) {
    const amount = NUMBERS[m[1]!] ?? Number(m[1])
    return ago(amount, m[2]!, now, m[0])
  }
  if (
    (m = new RegExp(`\\b(?:in|over|during) the (?:last|past) ${NUMBER_PATTERN} (day|week|month)s?\\b`).exec(t)) !== null
  ) {
    const amount = NUMBERS[m[1]!] ?? Number(m[1])
    const unitDays = m[2] === "day" ? 1 : m[2] === "week" ? 7 : 30
    return days(now - amount * unitDays * DAY, now, m[0])
  }
  if (
    (m = /\b(?:in|over|during) the (?:last|past) (?:few )?days\b|\bthis week\b|\bthese past few days\b/.exec(t)) !==
    null
  ) {
    return union(days(now - 6 * DAY, now, m[0]), span(startOfWeek(now) - MARGIN, now + MARGIN, m[0]))
  }
  if ((m = /\b(last|this|over the|on the) weekend\b/.exec(t)) !== null) {
    // The most recent Saturday and Sunday (this one if today is in it).
    const day = startOfDay(now)
    const sinceSaturday = (new Date(day).getUTCDay() + 1) % 7
    const saturday = day - sinceSaturday * DAY
    return days(saturday, saturday + DAY, m[0])
  }
  // "on Thursday" is a day; "on Thursdays" or "on Thursday evenings" is a habit, not a time.
  if (
    (m = new RegExp(
      `\\b(?:last|on|this past) (${WEEKDAYS.join("|")})\\b(?! (?:mornings|afternoons|evenings|nights)\\b)`
    ).exec(t)) !== null
  ) {
    const target = WEEKDAYS.indexOf(m[1]!)
    const back = (today.getUTCDay() - target + 7) % 7 || 7
    return days(now - back * DAY, now - back * DAY, m[0])
  }
  if ((m = /\blast week\b/.exec(t)) !== null) {
    const calendar = span(startOfWeek(now) - 7 * DAY - MARGIN, startOfWeek(now) + MARGIN, m[0])
    return union(days(now - 13 * DAY, now - 7 * DAY, m[0]), calendar)
  }
  if ((m = /\blast month\b/.exec(t)) !== null) {
    const month = today.getUTCMonth()
    const calendar = span(monthStart(year, month - 1) - MARGIN, monthStart(year, month) + MARGIN, m[0])
    return union(days(now - 60 * DAY, now - 30 * DAY, m[0]), calendar)
  }
  if ((m = /\bthis month\b/.exec(t)) !== null)
    return span(monthStart(year, today.getUTCMonth()) - MARGIN, now + MARGIN, m[0])
  if ((m = /\blast year\b/.exec(t)) !== null)
    return span(Date.UTC(year - 1, 0, 1) - MARGIN, Date.UTC(year, 0, 1) + MARGIN, m[0])
  if ((m = /\bthis year\b/.exec(t)) !== null) return span(Date.UTC(year, 0, 1) - MARGIN, now + MARGIN, m[0])
  if ((m = /\b(?:last|this past) (spring|summer|autumn|fall|winter)\b/.exec(t)) !== null) {
    const [from, to] = SEASONS[m[1]!]!
    // The most recent season of that name that has started.
    const seasonYear = monthStart(year, from) <= now ? year : year - 1
    return span(monthStart(seasonYear, from) - MARGIN, monthStart(seasonYear, to) + MARGIN, m[0])
  }
  if (
    (m = new RegExp(
      `\\b(?:in|during|on|back in|early|late|mid) (?:early |late |mid-)?${MONTH_PATTERN}(?:,? (\\d{4}))?\\b`
    ).exec(t)) !== null
  ) {
    return pastMonth(monthIndex(m[1]!), m[2] === undefined ? undefined : Number(m[2]), now, m[0])
  }
  if ((m = new RegExp(`\\b${MONTH_PATTERN} (\\d{4})\\b`).exec(t)) !== null) {
    return pastMonth(monthIndex(m[1]!), Number(m[2]), now, m[0])
  }
  if ((m = /\b(?:in|during|back in) (20\d{2}|19\d{2})\b/.exec(t)) !== null) {
    const y = Number(m[1])
    return span(Date.UTC(y, 0, 1) - MARGIN, Date.UTC(y + 1, 0, 1) + MARGIN, m[0])
  }
  return undefined
}

export const inWindow = (window: TimeWindow, at: number): boolean => at >= window.start && at < window.end
