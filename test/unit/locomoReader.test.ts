import { describe, expect, it } from "vitest"
import { loadLocomoConversation, locomoAvailable, sessionTime } from "../../bench/recall/locomo.ts"

describe("the LoCoMo reader of bench:recall", () => {
  it("reads a session's date as written in the data set", () => {
    expect(new Date(sessionTime("1:56 pm on 8 May, 2023")).toISOString()).toBe("2023-05-08T13:56:00.000Z")
    expect(new Date(sessionTime("12:09 am on 13 September, 2023")).toISOString()).toBe("2023-09-13T00:09:00.000Z")
    expect(() => sessionTime("yesterday")).toThrow(/unreadable/)
  })

  it.skipIf(!locomoAvailable())(
    "turns a conversation into memories in dialog order and questions whose evidence names a turn",
    async () => {
      const conversation = await loadLocomoConversation("30")
      expect(conversation.split).toBe("tune")
      const keys = new Set(conversation.memories.map((memory) => memory.key))
      expect(conversation.questions.length).toBeGreaterThan(0)
      expect(
        conversation.questions.every((q) => q.evidence.length > 0 && q.evidence.every((key) => keys.has(key)))
      ).toBe(true)
      for (let i = 1; i < conversation.memories.length; i++) {
        expect(conversation.memories[i]!.createdAt).toBeGreaterThan(conversation.memories[i - 1]!.createdAt)
      }
      expect(conversation.now).toBeGreaterThan(conversation.memories.at(-1)!.createdAt)
      expect(conversation.memories[0]!.content).toMatch(/^\w+: /)
    }
  )
})
