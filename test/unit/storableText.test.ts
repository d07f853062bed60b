import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { isStorableJson, isStorableText, storableJson, storableText } from "../../src/domain/storableText.ts"

/** Strings of arbitrary UTF-16 code units: NUL, lone surrogates and proper pairs all come up. */
const anyText = fc.string({
  unit: fc.oneof(
    fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)),
    fc.constantFrom("\u0000", "\ud800", "\udfff", "😀", "a")
  ),
  maxLength: 30
})

describe("storableText", () => {
  it("replaces NUL and unpaired surrogates with U+FFFD, one for one, and keeps everything else", () => {
    expect(storableText("a\u0000b")).toBe("a\ufffdb")
    expect(storableText("x\ud800y\udc00z")).toBe("x\ufffdy\ufffdz")
    expect(storableText("\udc00\ud800")).toBe("\ufffd\ufffd")
    expect(storableText("pair 😀 é")).toBe("pair 😀 é")
  })

  it("always gives storable text of the same length, unchanged where it was storable (property)", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const stored = storableText(text)
        expect(isStorableText(stored)).toBe(true)
        expect(stored.isWellFormed()).toBe(true)
        expect(stored.includes("\u0000")).toBe(false)
        expect(stored.length).toBe(text.length)
        expect(storableText(stored)).toBe(stored)
        for (let i = 0; i < text.length; i++) {
          if (stored[i] !== text[i]) expect(stored[i]).toBe("\ufffd")
        }
        if (isStorableText(text)) expect(stored).toBe(text)
      }),
      { numRuns: 1000 }
    )
  })
})

describe("storableJson", () => {
  it("cleans every string and key of a JSON value and leaves storable values as they are", () => {
    const value = { "k\u0000": ["a\ud800", { n: 1, t: true, z: null, s: "ok" }], plain: "fine" }
    expect(storableJson(value)).toEqual({ "k\ufffd": ["a\ufffd", { n: 1, t: true, z: null, s: "ok" }], plain: "fine" })
    const clean = { a: ["b", { c: "d" }] }
    expect(storableJson(clean)).toBe(clean)
  })

  it("always gives a storable value (property)", () => {
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        anyText,
        fc.integer(),
        fc.constant(null),
        fc.array(tie("value"), { maxLength: 3 }),
        fc.dictionary(anyText, tie("value"), { maxKeys: 3 })
      )
    })).value
    fc.assert(
      fc.property(json, (value) => isStorableJson(storableJson(value))),
      { numRuns: 500 }
    )
  })

  it("checks values nested far deeper than the stack allows", () => {
    let deep: unknown = "x\u0000"
    for (let i = 0; i < 100_000; i++) deep = [deep]
    expect(isStorableJson(deep)).toBe(false)
  })
})
