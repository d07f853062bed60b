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
  const res = await gw.request<{ profile: ProfileJson }>("POST", "/api/profiles", { json: { externalId: `memories-${++counter}` } })
  return res.body.profile
}

const add = (profile: string, json: unknown) =>
  gw.request<{ memory: MemoryJson }>("POST", `/api/profiles/${profile}/memories`, { json })

const list = (profile: string, query = "") =>
  gw.request<{ memories: Array<MemoryJson> }>("GET", `/api/profiles/${profile}/memories${query}`)

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

  it("answers 404 for an unknown profile", async () => {
    expectError(await add("ghost", { content: "x", type: "fact" }), 404, "profile_not_found")
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
    expect(all.body.memories.map((m) => m.content)).toEqual(["newer mid fact", "mid preference", "low fact", "high event"])
    const facts = await list(profile.id, "?type=fact")
    expect(facts.body.memories.map((m) => m.content)).toEqual(["newer mid fact", "low fact"])
    const limited = await list(profile.externalId, "?limit=1&offset=1")
    expect(limited.body.memories.map((m) => m.content)).toEqual(["mid preference"])
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
    await gw.query("UPDATE memories SET created_at = now() - interval '60 days' WHERE id = ANY($1::uuid[])", [[event.id, fact.id]])

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
