import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError, expectIsoTimestamp, type MemoryJson, type ProfileJson, type TraitJson } from "./support/wire.ts"

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway()
})
afterAll(() => gw.close())

const create = async (externalId: string) => {
  const res = await gw.request<{ profile: ProfileJson }>("POST", "/api/profiles", { json: { externalId } })
  expect([200, 201]).toContain(res.status)
  return res.body.profile
}

describe("POST /api/profiles (get or create)", () => {
  it("creates a profile with 201, then returns the same one with 200", async () => {
    const first = await gw.request<{ profile: ProfileJson }>("POST", "/api/profiles", {
      json: { externalId: "create-1" }
    })
    expect(first.status).toBe(201)
    const profile = first.body.profile
    expect(profile).toMatchObject({ externalId: "create-1", summary: null, summaryVersion: 0, summaryUpdatedAt: null })
    expect(profile.id).toMatch(/^[0-9a-f-]{36}$/)
    expectIsoTimestamp(profile.createdAt)
    expectIsoTimestamp(profile.updatedAt)

    const second = await gw.request<{ profile: ProfileJson }>("POST", "/api/profiles", {
      json: { externalId: "create-1" }
    })
    expect(second.status).toBe(200)
    expect(second.body.profile).toEqual(profile)
  })

  it("trims the external id", async () => {
    const profile = await create("  padded-id  ")
    expect(profile.externalId).toBe("padded-id")
    expect((await create("padded-id")).id).toBe(profile.id)
  })

  it("creates exactly one profile under concurrent first requests", async () => {
    const responses = await Promise.all(
      Array.from({ length: 8 }, () =>
        gw.request<{ profile: ProfileJson }>("POST", "/api/profiles", { json: { externalId: "racer" } })
      )
    )
    expect(responses.filter((r) => r.status === 201)).toHaveLength(1)
    expect(new Set(responses.map((r) => r.body.profile.id)).size).toBe(1)
    const rows = await gw.query("SELECT id FROM profiles WHERE external_id = 'racer'")
    expect(rows).toHaveLength(1)
  })

  it.each([
    ["an empty external id", { externalId: "" }, "invalid_external_id"],
    ["a blank external id", { externalId: "   " }, "invalid_external_id"],
    ["an external id over 256 characters", { externalId: "x".repeat(257) }, "invalid_external_id"],
    ["a control character", { externalId: "bad\u0000id" }, "invalid_external_id"],
    ["a number", { externalId: 42 }, "invalid_external_id"],
    ["no external id", {}, "missing_external_id"]
  ])("rejects %s with 400 and stores nothing", async (_, json, code) => {
    const before = await gw.counts()
    const res = await gw.request("POST", "/api/profiles", { json })
    const message = expectError(res, 400, code)
    expect(message).toContain("externalId")
    expect(await gw.counts()).toEqual(before)
  })

  it("rejects malformed JSON with 400 invalid_json", async () => {
    const before = await gw.counts()
    expectError(await gw.request("POST", "/api/profiles", { rawBody: '{"externalId": ' }), 400, "invalid_json")
    expect(await gw.counts()).toEqual(before)
  })

  it("rejects a body that is not an object", async () => {
    expectError(await gw.request("POST", "/api/profiles", { json: ["a"] }), 400, "invalid_request_body")
  })

  it("rejects a non-JSON content type with 415", async () => {
    const res = await gw.request("POST", "/api/profiles", {
      rawBody: "externalId=x",
      headers: { "content-type": "application/x-www-form-urlencoded" }
    })
    expect(expectError(res, 415, "unsupported_media_type")).toContain("application/json")
  })

  it("rejects a body over the 1 MiB limit with 413 and stores nothing", async () => {
    const before = await gw.counts()
    const res = await gw.request("POST", "/api/profiles", {
      json: { externalId: "big", padding: "x".repeat(1024 * 1024) }
    })
    expectError(res, 413, "request_too_large")
    expect(await gw.counts()).toEqual(before)
  })
})

describe("GET /api/profiles", () => {
  it("lists newest first with a numeric total, paginated", async () => {
    for (const id of ["list-a", "list-b", "list-c"]) await create(id)
    const res = await gw.request<{ profiles: Array<ProfileJson>; total: number }>(
      "GET",
      "/api/profiles?search=list-&limit=2"
    )
    expect(res.status).toBe(200)
    expect(res.body.total).toBe(3)
    expect(res.body.profiles.map((p) => p.externalId)).toEqual(["list-c", "list-b"])
    expect(res.body.profiles[0]).not.toHaveProperty("traits")
    const next = await gw.request<{ profiles: Array<ProfileJson>; total: number }>(
      "GET",
      "/api/profiles?search=list-&limit=2&offset=2"
    )
    expect(next.body).toMatchObject({ total: 3, profiles: [{ externalId: "list-a" }] })
  })

  it("says how much is known of each listed profile and when it was last active", async () => {
    const profile = await create("counted")
    await gw.request("PUT", "/api/profiles/counted/traits/timezone", { json: { value: "Europe/Berlin" } })
    for (const content of ["Moved to Berlin", "Has a cat"]) {
      await gw.request("POST", "/api/profiles/counted/memories", { json: { content, type: "fact" } })
    }
    await gw.query(
      "INSERT INTO messages (profile_id, role, content, created_at) VALUES ($1, 'user', 'hi', now() + interval '1 hour'), ($1, 'assistant', 'hello', now() + interval '1 hour')",
      [profile.id]
    )
    const res = await gw.request<{ profiles: Array<ProfileJson & { counts: unknown; lastActivityAt: string }> }>(
      "GET",
      "/api/profiles?search=counted"
    )
    expect(res.body.profiles).toHaveLength(1)
    const [listed] = res.body.profiles
    expect(listed!.counts).toEqual({ traits: 1, memories: 2, messages: 2 })
    // The last message is newer than the last change of the profile.
    expect(Date.parse(listed!.lastActivityAt)).toBeGreaterThan(Date.parse(listed!.updatedAt))
    expect(
      (await gw.request<{ profiles: Array<{ counts: unknown }> }>("GET", "/api/profiles?search=list-a")).body
        .profiles[0]?.counts
    ).toEqual({ traits: 0, memories: 0, messages: 0 })
  })

  it("defaults to 20 and caps limit at 100", async () => {
    await Promise.all(Array.from({ length: 105 }, (_, i) => create(`bulk-${String(i).padStart(3, "0")}`)))
    const byDefault = await gw.request<{ profiles: Array<ProfileJson>; total: number }>(
      "GET",
      "/api/profiles?search=bulk-"
    )
    expect(byDefault.body.profiles).toHaveLength(20)
    expect(byDefault.body.total).toBe(105)
    const capped = await gw.request<{ profiles: Array<ProfileJson> }>("GET", "/api/profiles?search=bulk-&limit=500")
    expect(capped.body.profiles).toHaveLength(100)
  })

  it("searches case-insensitively by substring, with % and _ taken literally", async () => {
    for (const id of ["Search_Me", "searchXme", "100%-sure", "plain"]) await create(id)
    const names = async (search: string) => {
      const res = await gw.request<{ profiles: Array<ProfileJson> }>(
        "GET",
        `/api/profiles?search=${encodeURIComponent(search)}`
      )
      return res.body.profiles.map((p) => p.externalId).sort()
    }
    expect(await names("CH_m")).toEqual(["Search_Me"])
    expect(await names("search")).toEqual(["Search_Me", "searchXme"])
    expect(await names("%")).toEqual(["100%-sure"])
    expect(await names("0%-")).toEqual(["100%-sure"])
  })

  it.each([
    ["limit=abc", "invalid_limit"],
    ["limit=0", "invalid_limit"],
    ["limit=1.5", "invalid_limit"],
    ["offset=-1", "invalid_offset"],
    [`search=${"s".repeat(257)}`, "invalid_search"]
  ])("rejects %s with 400", async (query, code) => {
    const res = await gw.request("GET", `/api/profiles?${query}`)
    const message = expectError(res, 400, code)
    expect(message).toContain(code.replace("invalid_", ""))
  })
})

describe("GET /api/profiles/{id}", () => {
  it("reads by external id and by UUID, with traits and recent memories", async () => {
    const profile = await create("reader")
    await gw.request("PUT", "/api/profiles/reader/traits/name", { json: { value: "Ada" } })
    await gw.request("POST", "/api/profiles/reader/memories", { json: { content: "Likes tea", type: "preference" } })

    const byExternal = await gw.request<{
      profile: ProfileJson & { traits: Array<TraitJson> }
      recentMemories: Array<MemoryJson>
    }>("GET", "/api/profiles/reader")
    expect(byExternal.status).toBe(200)
    expect(byExternal.body.profile).toMatchObject({ id: profile.id, externalId: "reader" })
    expect(byExternal.body.profile.traits).toMatchObject([
      { key: "name", value: "Ada", source: "manual", confidence: 1 }
    ])
    expect(byExternal.body.recentMemories).toHaveLength(1)
    expect(Object.keys(byExternal.body.recentMemories[0]!).sort()).toEqual([
      "content",
      "createdAt",
      "id",
      "importance",
      "type"
    ])

    const byUuid = await gw.request("GET", `/api/profiles/${profile.id}`)
    expect(byUuid.body).toEqual(byExternal.body)
  })

  it("lists the ten newest memories as recentMemories", async () => {
    await create("many-memories")
    for (let i = 0; i < 12; i++) {
      await gw.request("POST", "/api/profiles/many-memories/memories", {
        json: { content: `memory ${i}`, type: "fact" }
      })
    }
    const res = await gw.request<{ recentMemories: Array<MemoryJson> }>("GET", "/api/profiles/many-memories")
    expect(res.body.recentMemories.map((m) => m.content)).toEqual(
      Array.from({ length: 10 }, (_, i) => `memory ${11 - i}`)
    )
  })

  it("refuses an external id equal to another profile's UUID, so a UUID in a path always means that profile", async () => {
    const target = await create("uuid-owner")
    expectError(
      await gw.request("POST", "/api/profiles", { json: { externalId: target.id } }),
      400,
      "invalid_external_id"
    )
    const res = await gw.request<{ profile: ProfileJson }>("GET", `/api/profiles/${target.id}`)
    expect(res.body.profile.id).toBe(target.id)
  })

  it("addresses external ids with URL-special characters", async () => {
    const profile = await create("user@example.com/42 ü")
    const res = await gw.request<{ profile: ProfileJson }>(
      "GET",
      `/api/profiles/${encodeURIComponent("user@example.com/42 ü")}`
    )
    expect(res.status).toBe(200)
    expect(res.body.profile.id).toBe(profile.id)
  })

  it.each([
    "nobody",
    "00000000-0000-0000-0000-000000000000",
    "not-a-uuid-but-looks-close-0000",
    "'; DROP TABLE profiles; --"
  ])("answers 404 profile_not_found for %s", async (ref) => {
    expectError(await gw.request("GET", `/api/profiles/${encodeURIComponent(ref)}`), 404, "profile_not_found")
  })
})

describe("PATCH /api/profiles/{id}", () => {
  it("sets the summary and bumps summaryVersion", async () => {
    const profile = await create("summarised")
    const res = await gw.request<{ profile: ProfileJson }>("PATCH", "/api/profiles/summarised", {
      json: { summary: "Likes tea." }
    })
    expect(res.status).toBe(200)
    expect(res.body.profile).toMatchObject({ summary: "Likes tea.", summaryVersion: 1 })
    expectIsoTimestamp(res.body.profile.summaryUpdatedAt)
    expect(res.body.profile.updatedAt >= profile.updatedAt).toBe(true)
  })

  it("loses no version under concurrent updates", async () => {
    await create("contended")
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        gw.request("PATCH", "/api/profiles/contended", { json: { summary: `v${i}` } })
      )
    )
    const res = await gw.request<{ profile: ProfileJson }>("GET", "/api/profiles/contended")
    expect(res.body.profile.summaryVersion).toBe(10)
  })

  it("rejects a missing or oversized summary and an unknown profile", async () => {
    await create("patch-errors")
    expectError(await gw.request("PATCH", "/api/profiles/patch-errors", { json: {} }), 400, "missing_summary")
    expectError(
      await gw.request("PATCH", "/api/profiles/patch-errors", { json: { summary: 5 } }),
      400,
      "invalid_summary"
    )
    expectError(
      await gw.request("PATCH", "/api/profiles/patch-errors", { json: { summary: "x".repeat(20_001) } }),
      400,
      "invalid_summary"
    )
    const res = await gw.request<{ profile: ProfileJson }>("GET", "/api/profiles/patch-errors")
    expect(res.body.profile.summaryVersion).toBe(0)
    expectError(await gw.request("PATCH", "/api/profiles/ghost", { json: { summary: "x" } }), 404, "profile_not_found")
  })
})

describe("DELETE /api/profiles/{id}", () => {
  it("deletes the profile and everything attached, reporting numeric counts", async () => {
    const profile = await create("doomed")
    await gw.request("PUT", "/api/profiles/doomed/traits/name", { json: { value: "Bo" } })
    await gw.request("PUT", "/api/profiles/doomed/traits/interests", { json: { value: ["chess"] } })
    await gw.request("POST", "/api/profiles/doomed/memories", { json: { content: "Plays chess", type: "fact" } })
    await gw.query(
      "INSERT INTO messages (profile_id, role, content) VALUES ($1, 'user', 'hi'), ($1, 'assistant', 'hello')",
      [profile.id]
    )

    const res = await gw.request("DELETE", `/api/profiles/${profile.id}`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      profile: { id: profile.id, externalId: "doomed" },
      deleted: { traits: 2, memories: 1, messages: 2 }
    })
    expectError(await gw.request("GET", "/api/profiles/doomed"), 404, "profile_not_found")
    for (const table of ["traits", "memories", "messages"]) {
      expect(await gw.query(`SELECT 1 FROM ${table} WHERE profile_id = $1`, [profile.id])).toHaveLength(0)
    }
    expectError(await gw.request("DELETE", "/api/profiles/doomed"), 404, "profile_not_found")
  })
})

describe("GET /api/profiles/{id}/messages", () => {
  it("lists the recorded messages newest first, a page at a time", async () => {
    const profile = await create("talker")
    for (let i = 0; i < 5; i++) {
      await gw.query(
        "INSERT INTO messages (profile_id, role, content, created_at) VALUES ($1, 'user', $2, now() + $3 * interval '1 second')",
        [profile.id, `message ${i}`, i]
      )
    }
    type Page = { messages: Array<{ id: string; role: string; content: string; createdAt: string }> }
    const first = await gw.request<Page>("GET", "/api/profiles/talker/messages?limit=2")
    expect(first.status).toBe(200)
    expect(first.body.messages.map((m) => m.content)).toEqual(["message 4", "message 3"])
    const next = await gw.request<Page>(
      "GET",
      `/api/profiles/talker/messages?limit=2&before=${first.body.messages[1]!.id}`
    )
    expect(next.body.messages.map((m) => m.content)).toEqual(["message 2", "message 1"])
    const last = await gw.request<Page>(
      "GET",
      `/api/profiles/talker/messages?limit=2&before=${next.body.messages[1]!.id}`
    )
    expect(last.body.messages.map((m) => m.content)).toEqual(["message 0"])
    expect((await gw.request<Page>("GET", "/api/profiles/talker/messages")).body.messages).toHaveLength(5)

    expectError(await gw.request("GET", "/api/profiles/talker/messages?before=nope"), 400, "invalid_before")
    expectError(await gw.request("GET", "/api/profiles/talker/messages?limit=0"), 400, "invalid_limit")
    expectError(await gw.request("GET", "/api/profiles/ghost/messages"), 404, "profile_not_found")
  })
})

describe("GET /api/profiles/{id}/export", () => {
  it("exports the profile with all traits, memories and messages", async () => {
    const profile = await create("exported")
    await gw.request("PUT", "/api/profiles/exported/traits/timezone", { json: { value: "Europe/Berlin" } })
    await gw.request("POST", "/api/profiles/exported/memories", { json: { content: "Moved to Berlin", type: "event" } })
    await gw.query("INSERT INTO messages (profile_id, role, content) VALUES ($1, 'user', 'I moved to Berlin')", [
      profile.id
    ])

    const res = await gw.request<{
      profile: ProfileJson
      traits: Array<TraitJson>
      memories: Array<MemoryJson>
      messages: Array<{ id: string; role: string; content: string; createdAt: string }>
      exportedAt: string
    }>("GET", "/api/profiles/exported/export")
    expect(res.status).toBe(200)
    expect(res.body.profile).toMatchObject({ id: profile.id, externalId: "exported" })
    expect(res.body.traits).toMatchObject([{ key: "timezone", value: "Europe/Berlin", valueType: "string" }])
    expect(res.body.memories).toMatchObject([{ content: "Moved to Berlin", type: "event" }])
    expect(res.body.memories[0]!.decayFactor).toBeCloseTo(1, 5)
    expect(res.body.messages).toMatchObject([{ role: "user", content: "I moved to Berlin" }])
    expectIsoTimestamp(res.body.messages[0]!.createdAt)
    expectIsoTimestamp(res.body.exportedAt)
    expectError(await gw.request("GET", "/api/profiles/ghost/export"), 404, "profile_not_found")
  })
})

describe("routing", () => {
  it("answers unknown routes with an OpenAI-shaped 404", async () => {
    const res = await gw.request("GET", "/api/nothing-here")
    expect(expectError(res, 404, "not_found")).toContain("/api/nothing-here")
    expect(res.headers.get("x-service-request-id")).toMatch(/^[0-9a-f-]{36}$/)
  })
})
