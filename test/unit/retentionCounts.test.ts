import { describe, expect, it } from "@effect/vitest"
import { removedByNamespace, totalOf } from "../../src/retention/removedCounts.ts"

describe("what a retention sweep removed", () => {
  it("adds up each namespace's expired memories over batches and the history its policy removed", () => {
    const removed = removedByNamespace(
      [
        { namespace: "acme", deleted: 5000 },
        { namespace: "shop", deleted: 2 },
        { namespace: "acme", deleted: 3 }
      ],
      [
        { namespace: "acme", turns: 4, responses: 1 },
        { namespace: "news", turns: 10, responses: 0 }
      ]
    )
    expect(Object.fromEntries(removed)).toEqual({
      acme: { memories: 5003, turns: 4, responses: 1 },
      shop: { memories: 2, turns: 0, responses: 0 },
      news: { memories: 0, turns: 10, responses: 0 }
    })
    expect(totalOf(removed)).toEqual({ memories: 5005, turns: 14, responses: 1 })
  })

  it("leaves out a namespace that lost nothing (a policy with nothing past it)", () => {
    const removed = removedByNamespace([], [{ namespace: "quiet", turns: 0, responses: 0 }])
    expect(removed.size).toBe(0)
    expect(totalOf(removed)).toEqual({ memories: 0, turns: 0, responses: 0 })
  })
})
