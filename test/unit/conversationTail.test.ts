import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { layoutOf, withTail } from "../../src/injection/conversationTail.ts"
import { hasCacheBreakpoint, promptCacheKeyOf, withCacheBreakpoint } from "../../src/injection/promptCache.ts"
import { renderSections } from "../../src/injection/renderContext.ts"

type Item = { readonly role: string; readonly content: string }
const isAnswer = (item: unknown) => (item as Item).role === "assistant"
const block = (text: string): Item => ({ role: "system", content: text })
const say = (role: string, content: string): Item => ({ role, content })

describe("a conversation's tail", () => {
  it("goes after the latest item the model did not write: the new message, a tool's result, before a prefill", () => {
    expect(layoutOf([say("system", "S"), say("user", "u1")], isAnswer).point).toBe(2)
    expect(layoutOf([say("user", "u1"), say("assistant", "call"), say("tool", "result")], isAnswer).point).toBe(3)
    expect(layoutOf([say("user", "u1"), say("assistant", "Sure, ")], isAnswer).point).toBe(1)
  })

  it("knows where the earlier turns' tails went: after each item that an answer follows", () => {
    const items = [
      say("system", "S"),
      say("user", "u1"),
      say("assistant", "a1"),
      say("user", "u2"),
      say("assistant", "call"),
      say("tool", "t"),
      say("assistant", "a2"),
      say("user", "u3")
    ]
    expect(layoutOf(items, isAnswer).earlier).toEqual([2, 4, 6])
  })

  it("hashes the items before a position the same way whatever follows them", () => {
    const first = layoutOf([say("system", "S"), say("user", "u1")], isAnswer)
    const next = layoutOf([say("system", "S"), say("user", "u1"), say("assistant", "a1"), say("user", "u2")], isAnswer)
    expect(next.hashes[2]).toBe(first.hashes[first.point])
    const edited = layoutOf(
      [say("system", "S"), say("user", "u1!"), say("assistant", "a1"), say("user", "u2")],
      isAnswer
    )
    expect(edited.hashes[2]).not.toBe(first.hashes[first.point])
  })

  it("property: the next turn's request starts with this turn's request when each tail goes back where it was", () => {
    const turn = fc.record({
      user: fc.string({ maxLength: 12 }),
      answer: fc.string({ maxLength: 12 }),
      tail: fc.string()
    })
    fc.assert(
      fc.property(fc.array(turn, { minLength: 2, maxLength: 8 }), (turns) => {
        const kept = new Map<string, string>()
        let previous: ReadonlyArray<unknown> | undefined
        const history: Array<Item> = [say("system", "S")]
        for (const { user, answer, tail } of turns) {
          history.push(say("user", user))
          const layout = layoutOf(history, isAnswer)
          const back = new Map(
            layout.earlier.flatMap((position) => {
              const text = kept.get(layout.hashes[position]!)
              return text === undefined ? [] : [[position, text] as const]
            })
          )
          const sent = withTail(history, back, layout.point, `tail ${tail}`, block)
          if (previous !== undefined) expect(sent.slice(0, previous.length)).toEqual(previous)
          kept.set(layout.hashes[layout.point]!, `tail ${tail}`)
          previous = sent
          history.push(say("assistant", answer))
        }
      })
    )
  })
})

describe("the provider's cache", () => {
  const body = {
    system: "S",
    messages: [
      { role: "user", content: "u1" },
      { role: "assistant", content: [{ type: "text", text: "a1" }] },
      { role: "user", content: "u2" }
    ]
  }

  it("gets one Anthropic breakpoint at the end of what repeats, on a request without one", () => {
    const marked = withCacheBreakpoint(body, 2)
    expect((marked["messages"] as Array<unknown>)[2]).toEqual({
      role: "user",
      content: [{ type: "text", text: "u2", cache_control: { type: "ephemeral" } }]
    })
    expect(JSON.stringify(marked).split("cache_control")).toHaveLength(2)
  })

  it("never moves or adds to a request's own breakpoints", () => {
    for (const own of [
      { ...body, system: [{ type: "text", text: "S", cache_control: { type: "ephemeral" } }] },
      { ...body, tools: [{ name: "t", input_schema: {}, cache_control: { type: "ephemeral" } }] },
      {
        ...body,
        messages: [{ role: "user", content: [{ type: "text", text: "u1", cache_control: { type: "ephemeral" } }] }]
      }
    ]) {
      expect(hasCacheBreakpoint(own)).toBe(true)
      expect(withCacheBreakpoint(own, 0)).toBe(own)
    }
  })

  it("keys a user's OpenAI requests by a hash of the user, never the user id itself", () => {
    const key = promptCacheKeyOf("default", "alice")
    expect(key).toMatch(/^pmg-[0-9a-f]{32}$/)
    expect(key).toBe(promptCacheKeyOf("default", "alice"))
    expect(key).not.toBe(promptCacheKeyOf("default", "bob"))
    expect(key).not.toBe(promptCacheKeyOf("other", "alice"))
  })
})

describe("a block that does not repeat earlier ones", () => {
  const sections = [
    { plugin: "core", title: "Traits", priority: 200, items: [{ id: "name", text: "Name: Ada" }] },
    {
      plugin: "core",
      title: "Memories",
      priority: 100,
      items: [
        { id: "m1", text: "(fact) Has a dog named Rex" },
        { id: "m2", text: "(fact) Allergic to peanuts" }
      ]
    }
  ]

  it("renders the same items to the same bytes", () => {
    expect(renderSections(sections, 500).text).toBe(renderSections(sections, 500).text)
  })

  it("leaves out the lines the request carries already, and counts them as included", () => {
    const first = renderSections(sections, 500)
    const shown = new Set(first.text!.split("\n").filter((line) => line !== "- (fact) Allergic to peanuts"))
    const next = renderSections(sections, 500, shown)
    expect(next.text).toContain("Memories:\n- (fact) Allergic to peanuts")
    expect(next.text).not.toContain("Name: Ada")
    expect(next.text).not.toContain("Rex")
    expect(next.included).toEqual(first.included)
    expect(renderSections(sections, 500, new Set(first.text!.split("\n"))).text).toBeUndefined()
  })
})
