import { describe, expect, it } from "vitest"
import { inWindow, specificityOf, timeWindowOf } from "../../src/retrieval/timeWindow.ts"

// Monday 23 November 2026, 15:00 UTC
const now = Date.UTC(2026, 10, 23, 15)
const day = (y: number, m: number, d: number, h = 12) => Date.UTC(y, m - 1, d, h)

const covers = (text: string, inside: ReadonlyArray<number>, outside: ReadonlyArray<number>) => {
  const window = timeWindowOf(text, now)
  expect(window, text).toBeDefined()
  for (const at of inside) expect(inWindow(window!, at), `${text}: ${new Date(at).toISOString()} inside`).toBe(true)
  for (const at of outside) expect(inWindow(window!, at), `${text}: ${new Date(at).toISOString()} outside`).toBe(false)
  return window!
}

describe("the period a message names", () => {
  it("reads days relative to when the message is sent", () => {
    covers("What did I do yesterday?", [day(2026, 11, 22)], [day(2026, 11, 20), day(2026, 11, 24)])
    covers("what happened the day before yesterday", [day(2026, 11, 21)], [day(2026, 11, 23, 14), day(2026, 11, 19)])
    covers("What did I get up to three days ago?", [day(2026, 11, 20)], [day(2026, 11, 16), day(2026, 11, 23, 14)])
    covers("anything I did today", [day(2026, 11, 23, 9)], [day(2026, 11, 21)])
  })

  it("reads a calendar day, with or without its year, and never the verb 'may'", () => {
    covers("What did I eat on October 24, 2023?", [day(2023, 10, 24)], [day(2023, 10, 22), day(2026, 10, 24)])
    covers("how was I feeling on 8 May 2025", [day(2025, 5, 8)], [day(2025, 5, 10)])
    // Without a year: its latest past date.
    covers("what happened on March 16th?", [day(2026, 3, 16)], [day(2025, 3, 16), day(2026, 3, 18)])
    covers("the 3rd of December", [day(2025, 12, 3)], [day(2026, 12, 3)])
    expect(timeWindowOf("I may 2 go", now)).toBeUndefined()
    expect(timeWindowOf("February 30, 2026", now)).toBeUndefined()
  })

  it("reads 'as of' as when the question stands, not the period it asks about", () => {
    expect(timeWindowOf("How many dogs did I have, as of September 2025?", now)).toBeUndefined()
    covers("What did I do in March 2025, as of now?", [day(2025, 3, 10)], [day(2025, 5, 1)])
  })

  it("reads weeks, weekends and weekdays", () => {
    covers(
      "What happened last week?",
      [day(2026, 11, 16), day(2026, 11, 11)],
      [day(2026, 11, 23, 14), day(2026, 11, 3)]
    )
    covers("What did I do this week?", [day(2026, 11, 23, 9), day(2026, 11, 19)], [day(2026, 11, 10)])
    covers("a couple of weeks ago", [day(2026, 11, 9)], [day(2026, 11, 20), day(2026, 10, 25)])
    covers("over the weekend", [day(2026, 11, 21), day(2026, 11, 22)], [day(2026, 11, 20, 9), day(2026, 11, 23, 14)])
    covers("what did I do last Thursday", [day(2026, 11, 19)], [day(2026, 11, 12), day(2026, 11, 21)])
  })

  it("reads months, seasons and years, in the past", () => {
    covers("What did I do in March?", [day(2026, 3, 14)], [day(2026, 4, 2), day(2025, 3, 14)])
    covers("in December", [day(2025, 12, 10)], [day(2026, 12, 10)])
    covers("in March 2025", [day(2025, 3, 3)], [day(2026, 3, 3)])
    covers("last month", [day(2026, 10, 5), day(2026, 10, 20)], [day(2026, 11, 20), day(2026, 8, 1)])
    covers("last summer", [day(2026, 7, 1)], [day(2025, 7, 1), day(2026, 9, 15)])
    covers("back in 2024", [day(2024, 6, 1)], [day(2025, 6, 1)])
    covers("on 2026-03-14", [day(2026, 3, 14)], [day(2026, 3, 16)])
  })

  it("reads a part of a month, and a season of a year", () => {
    covers("Where was I in the second week of November?", [day(2026, 11, 10)], [day(2026, 11, 6), day(2026, 11, 16)])
    // Not last week: the last week of that August.
    covers("the last week of August 2025", [day(2025, 8, 28)], [day(2025, 8, 20), day(2026, 11, 16)])
    covers("the first weekend of July", [day(2026, 7, 4)], [day(2026, 7, 12)])
    covers("What did I do in early June?", [day(2026, 6, 3)], [day(2026, 6, 20)])
    covers("the end of May", [day(2026, 5, 28)], [day(2026, 5, 5)])
    covers("in the beginning of November 2025", [day(2025, 11, 4)], [day(2025, 11, 25)])
    covers("mid-August", [day(2026, 8, 15)], [day(2026, 8, 2), day(2026, 8, 29)])
    covers("during the summer of 2024", [day(2024, 7, 20)], [day(2025, 7, 20), day(2024, 10, 1)])
  })

  it("names no period for habits or for no time at all", () => {
    expect(timeWindowOf("What do I do on Thursday evenings?", now)).toBeUndefined()
    expect(timeWindowOf("Do I go swimming on Thursdays?", now)).toBeUndefined()
    expect(timeWindowOf("What should I cook for dinner?", now)).toBeUndefined()
    expect(timeWindowOf("I may want to march in the parade", now)).toBeUndefined()
  })

  it("trusts a short period more than a long one", () => {
    expect(specificityOf(timeWindowOf("yesterday", now)!)).toBe(1)
    expect(specificityOf(timeWindowOf("last week", now)!)).toBe(1)
    expect(specificityOf(timeWindowOf("in March", now)!)).toBeLessThan(1)
    expect(specificityOf(timeWindowOf("this year", now)!)).toBeLessThan(specificityOf(timeWindowOf("in March", now)!))
  })
})
