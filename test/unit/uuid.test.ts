import { randomUUID } from "node:crypto"
import { describe, expect, it } from "vitest"
import { isUuid } from "../../src/domain/Uuid.ts"

describe("isUuid", () => {
  it("knows a UUID in either letter case", () => {
    const uuid = randomUUID()
    expect(isUuid(uuid)).toBe(true)
    expect(isUuid(uuid.toUpperCase())).toBe(true)
  })

  it.each([
    ["36 dashes", "-".repeat(36)],
    ["hex without dashes", "0123456789abcdef0123456789abcdef"],
    ["dashes in the wrong places", "0123456-789a-bcde-f012-3456789abcdef"],
    ["a non-hex letter", "0123456g-89ab-cdef-0123-456789abcdef"],
    ["surrounding space", " 01234567-89ab-cdef-0123-456789abcdef"]
  ])("refuses %s", (_, text) => {
    expect(isUuid(text)).toBe(false)
  })
})
