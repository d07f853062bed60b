import fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { ChatMessage } from "../../src/providers/openai/chat.ts"
import {
  NOTE_HEADING,
  type Restoration,
  restoredCeiling,
  restoreThread,
  type ThreadDigest,
  type ThreadMessage,
  withRestored
} from "../../src/threads/restoreThread.ts"

const at = (minute: number) => Date.UTC(2026, 10, 1, 0, minute)

/** A thread of `count` turns: "question N" / "answer N", one minute apart. */
const thread = (count: number, topic = (n: number) => `question ${n}`): Array<ThreadMessage> =>
  Array.from({ length: count }, (_, i) => [
    { role: "user", content: topic(i + 1), toolCalls: null, toolCallId: null, createdAt: at(2 * i) },
    { role: "assistant", content: `answer ${i + 1}`, toolCalls: null, toolCallId: null, createdAt: at(2 * i + 1) }
  ]).flat()

const ask = (content: string) => [{ role: "user", content }]
const texts = (messages: ReadonlyArray<{ readonly content?: unknown }>) => messages.map((message) => message.content)
/** What the restored history costs, as the gateway estimates it: 4 characters a token, and 4 a message. */
const tokens = (messages: ReadonlyArray<ChatMessage>) =>
  messages.reduce(
    (sum, message) =>
      sum +
      Math.ceil(String(message.content ?? "").length / 4) +
      4 +
      (message.tool_calls == null ? 0 : Math.ceil(JSON.stringify(message.tool_calls).length / 4)),
    0
  )

describe("what a request gets back of its thread", () => {
  it("the whole thread when it fits, oldest first", () => {
    const restored = restoreThread(thread(2), ask("next"), 1000)
    expect(texts(restored.messages)).toEqual(["question 1", "answer 1", "question 2", "answer 2"])
    expect(restored).toMatchObject({
      restored: 4,
      relevant: 0,
      omitted: 0,
      summarized: false,
      summarizeUntil: undefined,
      note: undefined
    })
  })

  it("over the budget, the window starts at a cut point, and the summary is asked for up to it", () => {
    // A turn costs about 13 tokens (its text at 4 characters a token, and 4 a message): 131 in all.
    // With 40 tokens, the cut points are every 20 tokens of turns from the first: the window starts at
    // the last but one (after turn 8, at 104), which leaves turns 9 and 10.
    const restored = restoreThread(thread(10), ask("next"), 40)
    expect(texts(restored.messages)).toEqual(["question 9", "answer 9", "question 10", "answer 10"])
    expect(restored.omitted).toBe(16)
    // The last message before the window: answer 8.
    expect(restored.summarizeUntil).toBe(at(15))
  })

  it("the summary when it ends where the window starts, and no new summary while it does", () => {
    const digest = { text: "They talked about questions 1 to 8.", until: at(15) }
    const restored = restoreThread(thread(10), ask("next"), 60, digest)
    expect(restored.messages[0]).toEqual({
      role: "system",
      content: "Earlier in this conversation (a summary kept by the gateway):\nThey talked about questions 1 to 8."
    })
    expect(texts(restored.messages.slice(1))).toEqual(["question 9", "answer 9", "question 10", "answer 10"])
    expect(restored.summarized).toBe(true)
    expect(restored.summarizeUntil).toBeUndefined()
  })

  it("no summary that ends within a turn: it would not cover exactly what is before the window", () => {
    // The summary ends at question 8, without its answer.
    const restored = restoreThread(thread(10), ask("next"), 60, { text: "Up to question 8.", until: at(14) })
    expect(restored.summarized).toBe(false)
    expect(texts(restored.messages)[0]).toMatch(/^question /)
  })

  it("while the summary lags behind the window's next start, the window stays where the summary ends, within the ceiling", () => {
    // The summary (24 tokens) covers turns 1–4; it and turns 5–10 (79) no longer fit 88 tokens, but stay within 110.
    const digest = { text: "Up to answer 4.", until: at(7) }
    const restored = restoreThread(thread(10), ask("next"), 88, digest)
    expect(restored.summarized).toBe(true)
    expect(texts(restored.messages.slice(1, 3))).toEqual(["question 5", "answer 5"])
    expect(restored.summarizeUntil).toBeGreaterThan(at(7))
    expect(tokens(restored.messages)).toBeGreaterThan(88)
    expect(tokens(restored.messages)).toBeLessThanOrEqual(restoredCeiling(88))
    // Past the ceiling, the window moves on without the summary, which no longer ends where it starts.
    const later = restoreThread(thread(14), ask("next"), 88, digest)
    expect(later.summarized).toBe(false)
    expect(texts(later.messages)[0]).not.toBe("question 5")
    expect(tokens(later.messages)).toBeLessThanOrEqual(88)
  })

  it("an older turn relevant to the new message comes back in the note, not in the history", () => {
    const topic = (n: number) => (n === 2 ? "my sister Ines lives in Lisbon" : `question ${n}`)
    // 160 tokens: 40 for the note; the 40 turns (about 540) leave turn 2 far before the window.
    const restored = restoreThread(thread(40, topic), ask("When will I visit Ines in Lisbon?"), 160)
    expect(restored.note).toBe(`${NOTE_HEADING}\nuser: my sister Ines lives in Lisbon\nassistant: answer 2`)
    expect(restored.relevant).toBe(2)
    expect(texts(restored.messages)).not.toContain("my sister Ines lives in Lisbon")
    expect(texts(restored.messages).at(-1)).toBe("answer 40")
    // The history does not depend on the new message: the same for a question about something else.
    const other = restoreThread(thread(40, topic), ask("Anything else?"), 160)
    expect(other.messages).toEqual(restored.messages)
    expect(other.note).toBeUndefined()
    expect(restored.omitted + restored.restored + restored.relevant).toBe(80)
  })

  it("never more than the ceiling, whatever the thread and the budget", () => {
    for (const budget of [10, 25, 50, 100, 400]) {
      for (const count of [1, 3, 20, 60]) {
        const restored = restoreThread(thread(count), ask("question"), budget)
        expect(tokens(restored.messages)).toBeLessThanOrEqual(restoredCeiling(budget))
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

// A simulated chat, turn after turn: the client sends only its new message, the gateway restores the
// thread, records the turn, and the summary job (when there is a model) runs between turns.

const FILLER = "the quick brown fox jumps over the lazy dog while it keeps talking about nothing much "
const filler = (length: number) => FILLER.repeat(Math.ceil(length / FILLER.length)).slice(0, length)
/** A word only turn `n` holds (letters: the stemmer leaves them be). */
const keyword = (n: number) => `zq${String(n).replace(/\d/g, (digit) => "abcdefghij"[Number(digit)]!)}x`
const SUMMARY_PAD = filler(600)

interface Turn {
  readonly user: number
  readonly assistant: number
  readonly tool: boolean
}

/** The stored messages of turn `n` (from 1), user first; a tool turn calls a tool before it answers. */
const turnMessages = (n: number, turn: Turn): Array<ThreadMessage> => {
  const time = (i: number) => at(0) + n * 1000 + i
  const message = (i: number, role: string, content: string, more: Partial<ThreadMessage> = {}): ThreadMessage => ({
    role,
    content,
    toolCalls: null,
    toolCallId: null,
    createdAt: time(i),
    ...more
  })
  const user = message(0, "user", `u${n}: ${keyword(n)} ${filler(turn.user)}`)
  const answer = (i: number) => message(i, "assistant", `a${n}: ${filler(turn.assistant)}`)
  if (!turn.tool) return [user, answer(1)]
  const call = { id: `call_${n}`, type: "function", function: { name: "lookup", arguments: `{"turn":${n}}` } }
  return [
    user,
    message(1, "assistant", "", { toolCalls: [call] }),
    message(2, "tool", `result ${n}`, { toolCallId: call.id }),
    answer(3)
  ]
}

/** The turn a restored message or a line of the note belongs to, from its tag (`u7: …`, `a7: …`, `result 7`, `{"turn":7}`). */
const turnOf = (content: string) => {
  const tag = /(?:^|: )[ua](\d+):|result (\d+)|"turn":(\d+)/.exec(content)
  return Number(tag?.[1] ?? tag?.[2] ?? tag?.[3] ?? Number.NaN)
}

interface Step {
  readonly turn: number
  readonly restoration: Restoration
  /** The turn the request's new message asks about (its keyword). */
  readonly asked: number | undefined
}

/**
 * `worker`: how the summary job keeps up: "prompt" (it runs between every two turns), a number (it
 * runs once every so many turns), or "none" (no extraction model). The job does what
 * `ThreadSummarizer` does: folds the messages after the summary up to the asked bound into it.
 */
const simulate = (
  turns: ReadonlyArray<Turn>,
  budget: number,
  worker: "prompt" | "none" | number,
  asking: ReadonlyArray<number> = []
) => {
  const stored: Array<ThreadMessage> = []
  const steps: Array<Step> = []
  let digest: ThreadDigest | undefined
  let pending: number | undefined
  turns.forEach((turn, i) => {
    const n = i + 1
    const runs = worker === "prompt" || (typeof worker === "number" && n % worker === 0)
    if (runs && pending !== undefined) {
      const after = digest?.until ?? Number.NEGATIVE_INFINITY
      const folded = stored.filter((message) => message.createdAt > after && message.createdAt <= pending!)
      const last = folded.at(-1)
      if (last !== undefined)
        digest = { text: `covers up to turn ${turnOf(last.content)}. ${SUMMARY_PAD}`, until: last.createdAt }
      pending = undefined
    }
    const asked = n > 1 && asking.length > 0 ? 1 + (asking[i % asking.length]! % (n - 1)) : undefined
    const message = asked === undefined ? `u${n}: ${keyword(n)}` : `what about ${keyword(asked)}?`
    const restoration = restoreThread(stored, ask(message), budget, digest)
    if (restoration.summarizeUntil !== undefined) pending = Math.max(pending ?? 0, restoration.summarizeUntil)
    stored.push(...turnMessages(n, turn))
    steps.push({ turn: n, restoration, asked })
  })
  return steps
}

/** The turns whose history is not the previous turn's followed by the previous turn, byte for byte. */
const movesOf = (steps: ReadonlyArray<Step>, turns: ReadonlyArray<Turn>) =>
  steps.slice(1).filter(({ turn, restoration }) => {
    const previous = steps[turn - 2]!.restoration.messages
    const added = turnMessages(turn - 1, turns[turn - 2]!)
    const now = restoration.messages
    return (
      now.length !== previous.length + added.length ||
      JSON.stringify(now.slice(0, previous.length)) !== JSON.stringify(previous) ||
      !now
        .slice(previous.length)
        .every((message, i) => message.role === added[i]!.role && (message.content ?? "") === added[i]!.content)
    )
  }).length

/** The turn the window (the verbatim turns) starts at; the next turn when it is empty. */
const windowStartOf = ({ turn, restoration }: Step) => {
  const first = restoration.messages.find((message) => message.role !== "system")
  return first === undefined ? turn : turnOf(String(first.content))
}

const turnCost = (n: number, turn: Turn) =>
  tokens(turnMessages(n, turn).map(({ role, content, toolCalls }) => ({ role, content, tool_calls: toolCalls })))
const totalOf = (turns: ReadonlyArray<Turn>) => turns.reduce((sum, turn, i) => sum + turnCost(i + 1, turn), 0)

const aTurn = fc.record({
  user: fc.integer({ min: 10, max: 800 }),
  assistant: fc.integer({ min: 20, max: 3000 }),
  tool: fc.integer({ min: 0, max: 9 }).map((draw) => draw < 3)
})
const aThread = fc.array(aTurn, { minLength: 60, maxLength: 60 })

describe("a thread's history keeps the provider's prompt cache", () => {
  const BUDGET = 4000
  // The summary (about 170 tokens) and the window share the budget: the window's steps are half the rest.
  const STEP = (BUDGET - 170) / 2

  it("(a) each turn's history is the previous one's and the previous turn, but for about one move a step", () => {
    fc.assert(
      fc.property(aThread, (turns) => {
        const steps = simulate(turns, BUDGET, "prompt")
        const moves = movesOf(steps, turns)
        // What the last request restored from: every turn before it.
        const total = totalOf(turns.slice(0, -1))
        const expected = total / STEP
        // A turn bigger than a step passes several cut points at once, hence fewer moves than steps.
        expect(moves).toBeLessThanOrEqual(Math.ceil(expected) + 1)
        expect(moves).toBeGreaterThanOrEqual(Math.floor(expected / 2))
      }),
      { numRuns: 25 }
    )
  })

  it("(a) the same with a summary job that lags, and with none", () => {
    fc.assert(
      fc.property(aThread, fc.constantFrom<"none" | number>("none", 2, 5), (turns, worker) => {
        const moves = movesOf(simulate(turns, BUDGET, worker), turns)
        // Lagging, a step may take two moves: to the cut without the summary, then the summary.
        expect(moves).toBeLessThanOrEqual(2 * Math.ceil(totalOf(turns) / STEP) + 2)
      }),
      { numRuns: 25 }
    )
  })

  it("(b) the history never exceeds the budget by more than the lag allowance (a quarter)", () => {
    fc.assert(
      fc.property(aThread, fc.constantFrom<"prompt" | "none" | number>("prompt", "none", 3), (turns, worker) => {
        for (const { restoration } of simulate(turns, BUDGET, worker))
          expect(tokens(restoration.messages)).toBeLessThanOrEqual(restoredCeiling(BUDGET))
      }),
      { numRuns: 25 }
    )
  })

  it("(c) the summary shown always covers exactly the turns before the window", () => {
    fc.assert(
      fc.property(aThread, fc.constantFrom<"prompt" | number>("prompt", 2, 4), (turns, worker) => {
        const steps = simulate(turns, BUDGET, worker)
        for (const step of steps) {
          const { messages, summarized } = step.restoration
          if (!summarized) continue
          const covered = Number(/covers up to turn (\d+)\./.exec(String(messages[0]!.content))?.[1])
          expect(covered).toBe(windowStartOf(step) - 1)
        }
        // Past the first move, a prompt summary goes with (nearly) every turn.
        if (worker === "prompt") {
          const after = steps.filter((step) => windowStartOf(step) > 1)
          expect(after.filter((step) => !step.restoration.summarized).length).toBeLessThanOrEqual(
            Math.ceil(totalOf(turns) / STEP)
          )
        }
      }),
      { numRuns: 25 }
    )
  })

  it("(d) the note holds the older turn the message asks about, and none of the restored ones", () => {
    fc.assert(
      fc.property(aThread, fc.array(fc.nat(), { minLength: 1, maxLength: 60 }), (turns, asking) => {
        for (const step of simulate(turns, BUDGET, "prompt", asking)) {
          const { note, relevant } = step.restoration
          const start = windowStartOf(step)
          const noted = note === undefined ? [] : note.split("\n").slice(1).map(turnOf)
          expect(noted.length).toBe(relevant)
          for (const turn of noted) expect(turn).toBeLessThan(start)
          // Only the asked turn holds its keyword: it comes back, whole, when it is older than the window and fits.
          const asked = step.asked
          if (asked !== undefined && asked < start && noteSize(asked, turns[asked - 1]!) <= BUDGET / 4) {
            expect(new Set(noted)).toEqual(new Set([asked]))
            expect(noted).toHaveLength(turnMessages(asked, turns[asked - 1]!).length)
          } else expect(note).toBeUndefined()
        }
      }),
      { numRuns: 25 }
    )
  })

  it("restores byte-identical messages, tool calls and their results included", () => {
    const turns = [
      { user: 40, assistant: 80, tool: true },
      { user: 40, assistant: 80, tool: false },
      { user: 40, assistant: 80, tool: true }
    ]
    const steps = simulate(turns, BUDGET, "none")
    expect(movesOf(steps, turns)).toBe(0)
    expect(steps[2]!.restoration.messages.slice(0, 4)).toEqual([
      { role: "user", content: expect.stringMatching(/^u1: /) },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: '{"turn":1}' } }]
      },
      { role: "tool", content: "result 1", tool_call_id: "call_1" },
      { role: "assistant", content: expect.stringMatching(/^a1: /) }
    ])
  })
})

/** What turn `n` costs in the note: its lines and the heading, one token a line break. */
const noteSize = (n: number, turn: Turn) =>
  Math.ceil(NOTE_HEADING.length / 4) +
  1 +
  turnMessages(n, turn).reduce((sum, message) => {
    const calls =
      message.toolCalls === null
        ? ""
        : ` [calls ${message.toolCalls.map((call) => `${call.function.name}(${call.function.arguments})`).join(", ")}]`
    return sum + Math.ceil(`${message.role}: ${message.content}${calls}`.length / 4) + 1
  }, 0)
