import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { capConversation } from "../../src/extraction/capConversation.ts"

const at = new Date("2026-01-01T00:00:00Z")
const line = (role: string, content: string) => ({ role, content, at })

describe("capConversation", () => {
  it("keeps everything that fits", () => {
    const lines = [line("user", "hello"), line("assistant", "hi")]
    expect(capConversation(lines, 100)).toEqual(lines)
  })

  it("keeps the newest text: whole lines from the end, then the end of the line that crosses the limit", () => {
    const capped = capConversation(
      [line("user", "old line"), line("user", "0123456789"), line("assistant", "reply")],
      10
    )
    expect(capped).toEqual([line("user", "…6789"), line("assistant", "reply")])
  })

  it("never splits a surrogate pair", () => {
    const [cut] = capConversation([line("user", "😀😀😀")], 4)
    expect(cut!.content.isWellFormed()).toBe(true)
  })

  it("never exceeds the limit and always ends with the newest text (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("user", "assistant", "tool"), fc.string({ maxLength: 50 })), {
          maxLength: 6
        }),
        fc.integer({ min: 2, max: 120 }),
        (raw, max) => {
          const lines = raw.map(([role, content]) => line(role, content))
          const capped = capConversation(lines, max)
          const text = capped.map((l) => l.content).join("")
          expect(text.length).toBeLessThanOrEqual(max)
          const whole = lines.map((l) => l.content).join("")
          if (whole.length <= max) expect(capped).toEqual(lines)
          else expect(whole.endsWith(text.replace(/^…/, ""))).toBe(true)
        }
      ),
      { numRuns: 1000 }
    )
  })
})
