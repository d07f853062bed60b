import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError, expectIsoTimestamp, type MemoryJson, type ProfileJson } from "./support/wire.ts"

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway()
})
afterAll(() => gw.close())

let counter = 0
const freshProfile = async () => {
  const res = await gw.request<{ profile: ProfileJson }>("POST", "/api/profiles", {
    json: { externalId: `memories-${++counter}` }
  })
  return res.body.profile
}

const add = (profile: string, json: unknown) =>
  gw.request<{ memory: MemoryJson }>("POST", `/api/profiles/${profile}/memories`, { json })

const list = (profile: string, query = "") =>
  gw.request<{ memories: Array<MemoryJson>; total: number }>("GET", `/api/profiles/${profile}/memories${query}`)

describe("POST /api/profiles/{id}/memories", () => {
  it("creates a memory with 201 and the documented defaults", async () => {
    const profile = await freshProfile()
    const res = await add(profile.externalId, { content: "  Has a dog named Rex  ", type: "fact" })
    expect(res.status).toBe(201)
    expect(res.body.memory).toMatchObject({
      content: "Has a dog named Rex",
      type: "fact",
      importance: 0.5,
      decayFactor: 1,
      lastAccessedAt: null
    })
    expect(res.body.memory.id).toMatch(/^[0-9a-f-]{36}$/)
    expectIsoTimestamp(res.body.memory.createdAt)
  })

  it.each([
    ["missing content", { type: "fact" }, "missing_content"],
    ["blank content", { content: "   ", type: "fact" }, "invalid_content"],
    ["content over 4000 characters", { content: "x".repeat(4001), type: "fact" }, "invalid_content"],
    ["missing type", { content: "x" }, "missing_type"],
    ["an unknown type", { content: "x", type: "opinion" }, "invalid_type"],
    ["importance above 1", { content: "x", type: "fact", importance: 2 }, "invalid_importance"],
    ["negative importance", { content: "x", type: "fact", importance: -0.5 }, "invalid_importance"],
    ["non-numeric importance", { content: "x", type: "fact", importance: "high" }, "invalid_importance"]
  ])("rejects %s with 400 and stores nothing", async (_, json, code) => {
    const profile = await freshProfile()
    const before = await gw.counts()
    expectError(await add(profile.id, json), 400, code)
    expect(await gw.counts()).toEqual(before)
  })

  it("creates the profile of a user it does not know, as /v1 does, by the same user-id rule", async () => {
    const res = await add(encodeURIComponent("  Jose\u0301-new  "), { content: "Has a cat", type: "fact" })
    expect(res.status).toBe(201)
    // Trimmed and in NFC: the user a chat completion with `X-Service-Id: José-new` acts for.
    const profile = await gw.request<{ profile: ProfileJson }>("GET", `/api/profiles/${encodeURIComponent("José-new")}`)
    expect(profile.status).toBe(200)
    expect(profile.body.profile.externalId).toBe("José-new")
    expect((await list(profile.body.profile.id)).body.memories.map((m) => m.content)).toEqual(["Has a cat"])
    // The next write goes to the same profile.
    expect((await add("José-new", { content: "Has a dog", type: "fact" })).status).toBe(201)
    expect((await list("José-new")).body.total).toBe(2)

    // Nothing is created for a UUID that names no profile, a write that replaces memories, or a bad id.
    const before = await gw.counts()
    // A UUID in a path is a profile's internal id, never a user id.
    expectError(
      await add("00000000-0000-4000-8000-000000000000", { content: "x", type: "fact" }),
      404,
      "profile_not_found"
    )
    // A new profile has no memories to replace.
    expectError(
      await add("ghost", { content: "x", type: "fact", supersedes: ["00000000-0000-4000-8000-000000000000"] }),
      404,
      "profile_not_found"
    )
    expectError(await add("bad\u202euser", { content: "x", type: "fact" }), 400, "invalid_profile_id")
    expect(await gw.counts()).toEqual(before)
  })
})

describe("adding a memory the profile already has", () => {
  it("stores it once and answers 200 with the one it has: same type, same words whatever the case and spacing", async () => {
    const profile = await freshProfile()
    const first = await add(profile.id, { content: "Has a dog named Rex", type: "fact", importance: 0.8 })
    expect(first.status).toBe(201)
    const again = await add(profile.externalId, { content: "  has a DOG\tnamed   rex ", type: "fact", importance: 0.2 })
    expect(again.status).toBe(200)
    const { decayFactor: _, ...stored } = first.body.memory
    expect(again.body.memory).toMatchObject(stored)
    // Another type, or other words, is another memory.
    expect((await add(profile.id, { content: "Has a dog named Rex", type: "event" })).status).toBe(201)
    expect((await add(profile.id, { content: "Has a dog named Rex!", type: "fact" })).status).toBe(201)
    expect((await list(profile.id)).body.total).toBe(3)
  })

  it("lets a repeated memory replace others, and stores it again once the one it repeats is replaced", async () => {
    const profile = await freshProfile()
    const acme = (await add(profile.id, { content: "Works at Acme", type: "fact" })).body.memory
    const globex = (await add(profile.id, { content: "Works at Globex", type: "fact" })).body.memory
    const repeated = await add(profile.id, { content: "works at globex", type: "fact", supersedes: [acme.id] })
    expect(repeated.status).toBe(200)
    expect(repeated.body.memory.id).toBe(globex.id)
    const byId = async () => Object.fromEntries((await list(profile.id)).body.memories.map((m) => [m.id, m]))
    expect((await byId())[acme.id]!.supersededBy).toBe(globex.id)
    // Acme again, replacing Globex: the old Acme is replaced, so this is a memory of its own.
    const back = await add(profile.id, { content: "Works at Acme", type: "fact", supersedes: [globex.id] })
    expect(back.status).toBe(201)
    expect(back.body.memory.id).not.toBe(acme.id)
    expect((await byId())[globex.id]!.supersededBy).toBe(back.body.memory.id)
  })

  it("stores one memory when the same one is added many times at once", async () => {
    const profile = await freshProfile()
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => add(profile.id, { content: "Speaks Finnish", type: "fact" }))
    )
    expect(answers.map((res) => res.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201])
    expect(new Set(answers.map((res) => res.body.memory.id)).size).toBe(1)
    expect((await list(profile.id)).body.total).toBe(1)
  })
})

describe("GET /api/profiles/{id}/memories", () => {
  it("sorts by importance × decay, then newest first, and filters by type", async () => {
    const profile = await freshProfile()
    const ids: Record<string, string> = {}
    for (const [content, type, importance] of [
      ["low fact", "fact", 0.2],
      ["high event", "event", 0.9],
      ["mid preference", "preference", 0.5],
      ["newer mid fact", "fact", 0.5]
    ] as const) {
      ids[content] = (await add(profile.id, { content, type, importance })).body.memory.id
    }
    // A decayed memory ranks by importance × decayFactor.
    await gw.query("UPDATE memories SET decay_factor = 0.1 WHERE id = $1", [ids["high event"]])

    const all = await list(profile.id)
    expect(all.status).toBe(200)
    expect(all.body.memories.map((m) => m.content)).toEqual([
      "newer mid fact",
      "mid preference",
      "low fact",
      "high event"
    ])
    const facts = await list(profile.id, "?type=fact")
    expect(facts.body.memories.map((m) => m.content)).toEqual(["newer mid fact", "low fact"])
    const limited = await list(profile.externalId, "?limit=1&offset=1")
    expect(limited.body.memories.map((m) => m.content)).toEqual(["mid preference"])
    // `total` counts them all (of the type asked for), whatever the page.
    expect([all.body.total, facts.body.total, limited.body.total]).toEqual([4, 2, 4])
  })

  it("defaults to 20 memories", async () => {
    const profile = await freshProfile()
    await gw.query(
      "INSERT INTO memories (profile_id, content, type) SELECT $1, 'm' || i, 'fact' FROM generate_series(1, 25) i",
      [profile.id]
    )
    expect((await list(profile.id)).body.memories).toHaveLength(20)
    expect((await list(profile.id, "?limit=1000")).body.memories).toHaveLength(25)
  })

  it("rejects an unknown type filter and a bad limit", async () => {
    const profile = await freshProfile()
    expectError(await list(profile.id, "?type=opinion"), 400, "invalid_type")
    expectError(await list(profile.id, "?limit=-3"), 400, "invalid_limit")
    expectError(await list("ghost"), 404, "profile_not_found")
  })
})

describe("DELETE /api/profiles/{id}/memories/{memoryId}", () => {
  it("deletes a memory of that profile only", async () => {
    const owner = await freshProfile()
    const other = await freshProfile()
    const memory = (await add(owner.id, { content: "Secret", type: "fact" })).body.memory

    // Another profile's path cannot reach it.
    expectError(await gw.request("DELETE", `/api/profiles/${other.id}/memories/${memory.id}`), 404, "memory_not_found")
    expect((await list(owner.id)).body.memories).toHaveLength(1)

    const res = await gw.request("DELETE", `/api/profiles/${owner.externalId}/memories/${memory.id}`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true })
    expect((await list(owner.id)).body.memories).toHaveLength(0)
    expectError(await gw.request("DELETE", `/api/profiles/${owner.id}/memories/${memory.id}`), 404, "memory_not_found")
  })

  it("answers 404, not 500, for a memory id that is not a UUID", async () => {
    const profile = await freshProfile()
    expectError(await gw.request("DELETE", `/api/profiles/${profile.id}/memories/not-a-uuid`), 404, "memory_not_found")
    expectError(await gw.request("DELETE", "/api/profiles/ghost/memories/not-a-uuid"), 404, "profile_not_found")
  })
})

describe("memory decay", () => {
  it("halves a memory's decay factor every half-life of its type, counted from its last use", async () => {
    const profile = await freshProfile()
    const event = (await add(profile.id, { content: "Went to a concert", type: "event", importance: 0.9 })).body.memory
    const fact = (await add(profile.id, { content: "Is a nurse", type: "fact", importance: 0.9 })).body.memory
    const fresh = (await add(profile.id, { content: "Likes sushi", type: "preference", importance: 0.4 })).body.memory
    await gw.query("UPDATE memories SET created_at = now() - interval '60 days' WHERE id = ANY($1::uuid[])", [
      [event.id, fact.id]
    ])

    const decayOf = async () =>
      Object.fromEntries((await list(profile.id)).body.memories.map((m) => [m.content, m.decayFactor]))
    const decay = await decayOf()
    expect(decay["Went to a concert"]).toBeCloseTo(0.25, 2) // two 30-day half-lives
    expect(decay["Is a nurse"]).toBeCloseTo(0.5 ** (60 / 365), 2)
    expect(decay["Likes sushi"]).toBeCloseTo(1, 3)
    // The faded event now ranks below a fresh, less important memory.
    expect((await list(profile.id)).body.memories.map((m) => m.id)).toEqual([fact.id, fresh.id, event.id])

    await gw.query("UPDATE memories SET last_accessed_at = now() WHERE id = $1", [event.id])
    expect((await decayOf())["Went to a concert"]).toBeCloseTo(1, 3)
  })
})

describe("POST /api/profiles/{id}/memories/import", () => {
  const importing = (profile: string, memories: ReadonlyArray<unknown>) =>
    gw.request<{
      memories: Array<MemoryJson & { cues: Array<string>; occurredAt: string | null }>
      duplicates: number
    }>("POST", `/api/profiles/${profile}/memories/import`, { json: { memories } })

  it("adds many memories at once, in order, keeping their original times and cues", async () => {
    const profile = await freshProfile()
    const res = await importing(profile.externalId, [
      { content: "Grew up in Porto", type: "fact", createdAt: "2024-02-01T10:00:00Z" },
      {
        content: "Ran the Lisbon half marathon",
        type: "event",
        importance: 0.8,
        occurredAt: "2025-03-16",
        cues: ["running", "races"]
      },
      { content: "Prefers window seats", type: "preference" }
    ])
    expect(res.status).toBe(201)
    expect(res.body.memories.map((m) => m.content)).toEqual([
      "Grew up in Porto",
      "Ran the Lisbon half marathon",
      "Prefers window seats"
    ])
    expect(res.body.memories[0]).toMatchObject({
      createdAt: "2024-02-01T10:00:00.000Z",
      importance: 0.5,
      cues: [],
      occurredAt: null
    })
    expect(res.body.memories[1]).toMatchObject({
      occurredAt: "2025-03-16T00:00:00.000Z",
      importance: 0.8,
      cues: ["running", "races"]
    })
    expect((await list(profile.id)).body.memories).toHaveLength(3)
  })

  it("skips memories the profile has and repeats within the import, and says how many", async () => {
    const profile = await freshProfile()
    await add(profile.id, { content: "Grew up in Porto", type: "fact" })
    const res = await importing(profile.id, [
      { content: "grew up in  porto", type: "fact", createdAt: "2024-02-01T10:00:00Z" },
      { content: "Prefers window seats", type: "preference" },
      { content: "Grew up in Porto", type: "event" },
      { content: "prefers WINDOW seats", type: "preference" }
    ])
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ duplicates: 2 })
    expect(res.body.memories.map((m) => [m.content, m.type])).toEqual([
      ["Prefers window seats", "preference"],
      ["Grew up in Porto", "event"]
    ])
    expect((await list(profile.id)).body.total).toBe(3)

    // The same file again stores nothing.
    const again = await importing(profile.id, [{ content: "Prefers window seats", type: "preference" }])
    expect(again.body).toMatchObject({ memories: [], duplicates: 1 })
    expect((await list(profile.id)).body.total).toBe(3)
  })

  it("creates the profile of a user it does not know", async () => {
    const res = await importing("imported-new-user", [{ content: "Plays the cello", type: "fact" }])
    expect(res.status).toBe(201)
    expect((await list("imported-new-user")).body.memories.map((m) => m.content)).toEqual(["Plays the cello"])
  })

  it.each([
    ["an empty list", [], "invalid_memories"],
    [
      "more than 1000 memories",
      Array.from({ length: 1001 }, (_, i) => ({ content: `m${i}`, type: "fact" })),
      "invalid_memories"
    ],
    ["a creation time in the future", [{ content: "x", type: "fact", createdAt: "2999-01-01" }], "invalid_created_at"],
    ["a time that is no date", [{ content: "x", type: "fact", occurredAt: "2026-02-30" }], "invalid_memories"],
    [
      "too many cues",
      [{ content: "x", type: "fact", cues: Array.from({ length: 13 }, (_, i) => `cue ${i}`) }],
      "invalid_memories"
    ],
    [
      "one bad memory among good ones",
      [
        { content: "fine", type: "fact" },
        { content: "", type: "fact" }
      ],
      "invalid_memories"
    ],
    [
      "a superseded memory it does not have",
      [{ content: "x", type: "fact", supersedes: ["00000000-0000-4000-8000-000000000000"] }],
      "invalid_supersedes"
    ]
  ])("rejects %s with 400 and stores nothing", async (_, memories, code) => {
    const profile = await freshProfile()
    const before = await gw.counts()
    expectError(await importing(profile.id, memories), 400, code)
    expect(await gw.counts()).toEqual(before)
  })
})
