import { describe, expect, it } from "vitest"
import { restoreThread, type ThreadMessage, withRestored } from "../../src/threads/restoreThread.ts"

const at = (minute: number) => Date.UTC(2026, 10, 1, 0, minute)

/** A thread of `count` turns: "question N" / "answer N", one minute apart. */
const thread = (count: number, topic = (n: number) => `question ${n}`): Array<ThreadMessage> =>
  Array.from({ length: count }, (_, i) => [
    { role: "user", content: topic(i + 1), toolCalls: null, toolCallId: null, createdAt: at(2 * i) },
    { role: "assistant", content: `answer ${i + 1}`, toolCalls: null, toolCallId: null, createdAt: at(2 * i + 1) }
  ]).flat()

const ask = (content: string) => [{ role: "user", content }]
const texts = (messages: ReadonlyArray<{ readonly content?: unknown }>) => messages.map((message) => message.content)

describe("what a request gets back of its thread", () => {
  it("the whole thread when it fits, oldest first", () => {
    const restored = restoreThread(thread(2), ask("next"), 1000)
    expect(texts(restored.messages)).toEqual(["question 1", "answer 1", "question 2", "answer 2"])
    expect(restored).toMatchObject({
      restored: 4,
      relevant: 0,
      omitted: 0,
      summarized: false,
      summarizeUntil: undefined
    })
  })

  it("the latest whole turns within the budget, and asks for a summary of the rest", () => {
    // A turn costs about 13 tokens (its text at 4 characters a token, and 4 a message): 40 hold three.
    const restored = restoreThread(thread(10), ask("next"), 40)
    expect(texts(restored.messages)).toEqual([
      "question 8",
      "answer 8",
      "question 9",
      "answer 9",
      "question 10",
      "answer 10"
    ])
    expect(restored.omitted).toBe(14)
    // The newest turn left out: answer 7.
    expect(restored.summarizeUntil).toBe(at(13))
  })

  it("the summary of the older turns, once written, and no new summary while it covers them", () => {
    const digest = { text: "They talked about questions 1 to 8.", until: at(15) }
    const restored = restoreThread(thread(10), ask("next"), 60, digest)
    expect(restored.messages[0]).toEqual({
      role: "system",
      content: "Earlier in this conversation (a summary kept by the gateway):\nThey talked about questions 1 to 8."
    })
    expect(restored.summarized).toBe(true)
    expect(restored.summarizeUntil).toBeUndefined()
  })

  it("an older turn relevant to the new message, in its place before the latest turns", () => {
    const topic = (n: number) => (n === 2 ? "my sister Ines lives in Lisbon" : `question ${n}`)
    const restored = restoreThread(thread(10, topic), ask("When will I visit Ines in Lisbon?"), 60)
    expect(texts(restored.messages).slice(0, 2)).toEqual(["my sister Ines lives in Lisbon", "answer 2"])
    expect(restored.relevant).toBe(2)
    expect(texts(restored.messages).at(-1)).toBe("answer 10")
  })

  it("never more than the budget, whatever the thread", () => {
    for (const budget of [10, 25, 50, 100, 400]) {
      for (const count of [1, 3, 20, 60]) {
        const restored = restoreThread(thread(count), ask("question"), budget)
        const cost = restored.messages.reduce(
          (sum, message) => sum + Math.ceil(String(message.content).length / 4) + 4,
          0
        )
        expect(cost).toBeLessThanOrEqual(budget)
        if (restored.messages.length > 0) expect(restored.messages[0]!.role).toBe("user")
      }
    }
  })

  it("nothing twice for a client that sent the end of the thread itself; nothing at all for another history", () => {
    const sent = [
      { role: "user", content: "question 2" },
      { role: "assistant", content: "answer 2" },
      { role: "user", content: "question 3" }
    ]
    const restored = restoreThread(thread(2), sent, 1000)
    expect(texts(restored.messages)).toEqual(["question 1", "answer 1"])
    expect(restored.matched).toBe(2)
    const other = restoreThread(
      thread(2),
      [{ role: "user", content: "x" }, { role: "assistant", content: "y" }, ...ask("z")],
      1000
    )
    expect(other).toMatchObject({ messages: [], historyDiffers: true })
  })

  it("puts what is restored after the request's system messages", () => {
    const merged = withRestored(
      [{ role: "system", content: "Be brief." }, ...ask("now")],
      [{ role: "user", content: "before" }]
    )
    expect(texts(merged as Array<{ content: string }>)).toEqual(["Be brief.", "before", "now"])
  })
})
