import { describe, expect, it } from "vitest"
import { redactSecrets } from "../../src/providers/errors.ts"
import { errorDetail } from "../../src/upstream/errorBody.ts"

describe("redactSecrets", () => {
  it("redacts every given secret whatever its length, longest first", () => {
    expect(redactSecrets("key short1 was wrong: short1", ["short1"])).toBe("key [redacted] was wrong: [redacted]")
    expect(redactSecrets("bad key: k9", ["k9"])).toBe("bad key: [redacted]")
    expect(redactSecrets("abc-longer and abc", ["abc", "abc-longer"])).toBe("[redacted] and [redacted]")
    expect(redactSecrets("nothing to hide", [""])).toBe("nothing to hide")
  })
})

describe("errorDetail", () => {
  it("reads OpenAI and Anthropic error bodies", () => {
    expect(errorDetail(JSON.stringify({ error: { message: "m", type: "t", code: "c", param: "p" } }), false)).toEqual({
      message: "m",
      type: "t",
      code: "c",
      param: "p"
    })
    expect(
      errorDetail(JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "busy" } }), false)
    ).toMatchObject({ message: "busy", type: "overloaded_error" })
  })

  it("salvages the message of a JSON body cut short, wherever the cut falls (escapes included)", () => {
    const message = `Say "hi" é ${"x".repeat(10)}\u0001\\${"y".repeat(10)}`
    const body = JSON.stringify({ error: { type: "invalid_request_error", message } })
    const start = body.indexOf("Say")
    for (let cut = start + 1; cut < body.length - 3; cut++) {
      const detail = errorDetail(body.slice(0, cut), true)
      const salvaged = detail.message!.replace(/… \(error body cut at 64 KB\)$/, "")
      expect(detail.message).toMatch(/… \(error body cut at 64 KB\)$/)
      expect(message.startsWith(salvaged)).toBe(true)
      expect(detail.type).toBe("invalid_request_error")
    }
  })

  it("takes the start of a text body, and says when it was cut", () => {
    expect(errorDetail("  Bad gateway  ", false).message).toBe("Bad gateway")
    expect(errorDetail("y".repeat(2000), true).message).toBe(`${"y".repeat(500)} (error body cut at 64 KB)`)
  })
})
