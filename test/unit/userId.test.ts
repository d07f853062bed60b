import { Result } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { decodeHeaderText, normalizeUserId, parseUserId, userIdProblem } from "../../src/domain/UserId.ts"

const latin1OfUtf8 = (text: string) => Buffer.from(text, "utf8").toString("latin1")

describe("the user-id rule", () => {
  it("trims and brings ids to NFC", () => {
    expect(normalizeUserId("  Jose\u0301 ")).toBe("José")
    expect(normalizeUserId("A\u030a")).toBe("\u00c5")
  })

  it.each([
    ["", "blank"],
    ["x".repeat(257), "at most 256"],
    ["a\u0000b", "control"],
    ["a\u007fb", "control"],
    ["a\u200bb", "format"],
    ["a\u200eb", "format"],
    ["a\u202eb", "format"],
    ["a\u2066b", "format"],
    ["a\u00adb", "format"],
    ["a\ufeffb", "format"],
    ["a\u2028b", "separator"],
    ["a\ud800b", "format"]
  ])("refuses %j (%s)", (id, reason) => {
    expect(userIdProblem(id)).toContain(reason)
  })

  it("counts characters, not UTF-16 units, as the database does", () => {
    expect(userIdProblem("😀".repeat(256))).toBeUndefined()
    expect(userIdProblem("😀".repeat(257))).toContain("at most 256")
  })

  it("accepts what it gives back, unchanged (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 40 }), (raw) => {
        const parsed = parseUserId(raw)
        if (Result.isSuccess(parsed)) {
          expect(parsed.success).toBe(parsed.success.normalize("NFC"))
          expect(parseUserId(parsed.success)).toEqual(parsed)
        }
      }),
      { numRuns: 1000 }
    )
  })
})

describe("header text", () => {
  it("reads UTF-8 bytes that Node decoded as Latin-1 again as UTF-8", () => {
    expect(decodeHeaderText(latin1OfUtf8("José"))).toBe("José")
    expect(decodeHeaderText(latin1OfUtf8("用户-42 😀"))).toBe("用户-42 😀")
  })

  it("keeps a leading U+FEFF (not dropped as a byte order mark)", () => {
    expect(decodeHeaderText(latin1OfUtf8("\ufeff"))).toBe("\ufeff")
    expect(decodeHeaderText(latin1OfUtf8("\ufeffJosé"))).toBe("\ufeffJosé")
  })

  it("keeps Latin-1 text that is not UTF-8, and plain ASCII", () => {
    expect(decodeHeaderText("José")).toBe("José")
    expect(decodeHeaderText("plain-id")).toBe("plain-id")
  })

  it("gives back every text sent as UTF-8 (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 30 }), (text) => {
        expect(decodeHeaderText(latin1OfUtf8(text))).toBe(text)
      }),
      { numRuns: 1000 }
    )
  })
})
