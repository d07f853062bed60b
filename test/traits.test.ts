import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError, expectIsoTimestamp, type ProfileJson, type TraitJson } from "./support/wire.ts"

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway()
})
afterAll(() => gw.close())

let counter = 0
const freshProfile = async () => {
  const res = await gw.request<{ profile: ProfileJson }>("POST", "/api/profiles", {
    json: { externalId: `traits-${++counter}` }
  })
  return res.body.profile
}

const put = (profile: string, key: string, json: unknown) =>
  gw.request<{ trait: TraitJson }>("PUT", `/api/profiles/${encodeURIComponent(profile)}/traits/${key}`, { json })

describe("PUT /api/profiles/{id}/traits/{key}", () => {
  it("creates a manual trait with confidence 1.0 by default", async () => {
    const profile = await freshProfile()
    const res = await put(profile.externalId, "expertise_level", { value: "advanced" })
    expect(res.status).toBe(200)
    expect(res.body.trait).toMatchObject({
      key: "expertise_level",
      value: "advanced",
      valueType: "enum",
      category: "context",
      confidence: 1,
      source: "manual"
    })
    expectIsoTimestamp(res.body.trait.createdAt)
    expectIsoTimestamp(res.body.trait.updatedAt)
  })

  it("replaces a value, keeps createdAt, takes the given confidence and works by UUID", async () => {
    const profile = await freshProfile()
    const first = await put(profile.id, "name", { value: "Ada" })
    const second = await put(profile.id, "name", { value: "  Ada Lovelace ", confidence: 0.8 })
    expect(second.body.trait).toMatchObject({ value: "Ada Lovelace", confidence: 0.8, source: "manual" })
    expect(second.body.trait.createdAt).toBe(first.body.trait.createdAt)
    const list = await gw.request<{ traits: Array<TraitJson> }>("GET", `/api/profiles/${profile.externalId}/traits`)
    expect(list.body.traits).toHaveLength(1)
  })

  it("turns an extracted trait into a manual one", async () => {
    const profile = await freshProfile()
    await gw.query(
      `INSERT INTO traits (profile_id, key, value, value_type, category, confidence, source)
       VALUES ($1, 'preferred_language', '"German"', 'string', 'communication', 0.6, 'extracted')`,
      [profile.id]
    )
    const res = await put(profile.id, "preferred_language", { value: "English" })
    expect(res.body.trait).toMatchObject({ value: "English", source: "manual", confidence: 1 })
  })

  it("keeps the source it is given, as a restore from an export gives it, and refuses any other", async () => {
    const profile = await freshProfile()
    const learned = await put(profile.id, "name", { value: "Ada", confidence: 0.7, source: "extracted" })
    expect(learned.status).toBe(200)
    expect(learned.body.trait).toMatchObject({ value: "Ada", confidence: 0.7, source: "extracted" })
    expect((await put(profile.id, "name", { value: "Ada" })).body.trait).toMatchObject({ source: "manual" })
    expectError(await put(profile.id, "name", { value: "Ada", source: "guessed" }), 400, "invalid_source")
  })

  it("validates declared types: arrays, enums, strings", async () => {
    const profile = await freshProfile()
    expect((await put(profile.id, "interests", { value: ["chess", " go "] })).body.trait).toMatchObject({
      value: ["chess", "go"],
      valueType: "array",
      category: "preferences"
    })
    expect(expectError(await put(profile.id, "interests", { value: "chess" }), 400, "invalid_trait_value")).toContain(
      "expected an array"
    )
    expect(
      expectError(await put(profile.id, "interests", { value: ["chess", 3] }), 400, "invalid_trait_value")
    ).toContain("item 1")
    expect(expectError(await put(profile.id, "nps_category", { value: "fan" }), 400, "invalid_trait_value")).toContain(
      "promoter, passive, detractor"
    )
    expectError(await put(profile.id, "name", { value: 42 }), 400, "invalid_trait_value")
    expectError(await put(profile.id, "name", { value: "   " }), 400, "invalid_trait_value")
    expectError(await put(profile.id, "name", { value: "x".repeat(2001) }), 400, "invalid_trait_value")
  })

  it("types an undeclared key from its first value and holds it to that type", async () => {
    const profile = await freshProfile()
    expect((await put(profile.id, "plan", { value: { tier: "pro", seats: 5 } })).body.trait).toMatchObject({
      value: { tier: "pro", seats: 5 },
      valueType: "object",
      category: "custom"
    })
    expect((await put(profile.id, "plan", { value: { tier: "team" } })).body.trait.value).toEqual({ tier: "team" })
    expect(expectError(await put(profile.id, "plan", { value: "pro" }), 400, "invalid_trait_value")).toContain(
      "expected an object"
    )
    expect((await put(profile.id, "seats", { value: 5 })).body.trait.valueType).toBe("number")
    expect((await put(profile.id, "beta_user", { value: true })).body.trait.valueType).toBe("boolean")
  })

  it("keeps object keys exactly as sent", async () => {
    const profile = await freshProfile()
    const value = { first_name: "Ada", "Odd Key": [1, { nested_key: null }] }
    expect((await put(profile.id, "raw_object", { value })).body.trait.value).toEqual(value)
    const list = await gw.request<{ traits: Array<TraitJson> }>("GET", `/api/profiles/${profile.id}/traits`)
    expect(list.body.traits[0]!.value).toEqual(value)
  })

  it.each([
    ["a missing value", {}, "missing_value"],
    ["a null value", { value: null }, "invalid_trait_value"],
    ["a confidence above 1", { value: "Ada", confidence: 1.5 }, "invalid_confidence"],
    ["a negative confidence", { value: "Ada", confidence: -0.1 }, "invalid_confidence"],
    ["a string confidence", { value: "Ada", confidence: "high" }, "invalid_confidence"]
  ])("rejects %s with 400 and stores nothing", async (_, json, code) => {
    const profile = await freshProfile()
    const before = await gw.counts()
    expectError(await put(profile.id, "name", json), 400, code)
    expect(await gw.counts()).toEqual(before)
  })

  it("rejects an invalid key with 400 invalid_key", async () => {
    const profile = await freshProfile()
    for (const key of ["1abc", "has%20space", "x".repeat(65), "a$b"]) {
      const message = expectError(await put(profile.id, key, { value: "v" }), 400, "invalid_key")
      expect(message).toContain("key")
    }
    expect(await gw.query("SELECT 1 FROM traits WHERE profile_id = $1", [profile.id])).toHaveLength(0)
  })

  it("rejects a value over 16 KiB of JSON", async () => {
    const profile = await freshProfile()
    expectError(await put(profile.id, "blob", { value: { text: "y".repeat(17 * 1024) } }), 400, "invalid_trait_value")
  })

  it("answers 404 for an unknown profile and creates nothing", async () => {
    const before = await gw.counts()
    expectError(await put("ghost", "name", { value: "Ada" }), 404, "profile_not_found")
    expect(await gw.counts()).toEqual(before)
  })

  it("moves the profile's updatedAt", async () => {
    const profile = await freshProfile()
    await put(profile.id, "name", { value: "Ada" })
    const res = await gw.request<{ profile: ProfileJson }>("GET", `/api/profiles/${profile.id}`)
    expect(res.body.profile.updatedAt > profile.updatedAt).toBe(true)
  })
})

describe("GET and DELETE /api/profiles/{id}/traits", () => {
  it("lists traits by key with valueType and category", async () => {
    const profile = await freshProfile()
    await put(profile.id, "timezone", { value: "Europe/Berlin" })
    await put(profile.id, "detail_preference", { value: "brief" })
    const res = await gw.request<{ traits: Array<TraitJson> }>("GET", `/api/profiles/${profile.externalId}/traits`)
    expect(res.body.traits.map((t) => [t.key, t.valueType, t.category])).toEqual([
      ["detail_preference", "enum", "communication"],
      ["timezone", "string", "context"]
    ])
    expectError(await gw.request("GET", "/api/profiles/ghost/traits"), 404, "profile_not_found")
  })

  it("deletes a trait, then answers 404 trait_not_found", async () => {
    const profile = await freshProfile()
    await put(profile.id, "name", { value: "Ada" })
    const res = await gw.request("DELETE", `/api/profiles/${profile.id}/traits/name`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true })
    expectError(await gw.request("DELETE", `/api/profiles/${profile.id}/traits/name`), 404, "trait_not_found")
    expectError(await gw.request("DELETE", `/api/profiles/${profile.id}/traits/no%20such`), 404, "trait_not_found")
    expectError(await gw.request("DELETE", "/api/profiles/ghost/traits/name"), 404, "profile_not_found")
  })
})
