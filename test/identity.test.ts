import { randomUUID } from "node:crypto"
import fc from "fast-check"
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { MAX_USER_ID_LENGTH } from "../src/domain/UserId.ts"
import { eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { HOSTILE_PIECES, tableCounts, utf8HeaderValue } from "./support/hostile.ts"
import { expectError, type ProfileJson } from "./support/wire.ts"

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-test-identity-key",
    RATE_LIMIT_API_PER_MINUTE: "0"
  })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})
beforeEach(() => up.reset())

const create = async (externalId: string) => {
  const res = await gw.request<{ profile: ProfileJson }>("POST", "/api/profiles", { json: { externalId } })
  expect([200, 201]).toContain(res.status)
  return res.body.profile
}

const chat = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  gw.request("POST", "/v1/chat/completions", {
    json: { model: "gpt-test", messages: [{ role: "user", content: "hi" }], ...body },
    headers
  })

/**
 * The external id of the profile a successful completion used (from its context receipt), once its
 * turn is recorded (recording runs after the answer; later tests count rows).
 */
const profileOfReply = async (res: Awaited<ReturnType<typeof chat>>) => {
  expect(res.status).toBe(200)
  const requestId = res.headers.get("x-service-request-id")
  await eventually(async () =>
    (await gw.query("SELECT 1 FROM messages WHERE request_id = $1", [requestId])).length > 0 ? true : undefined
  )
  const { profileId } = JSON.parse(res.headers.get("x-service-context") ?? "{}") as { profileId: string }
  const [row] = await gw.query<{ external_id: string }>("SELECT external_id FROM profiles WHERE id = $1", [profileId])
  return row?.external_id
}

/** A profile whose external id is another profile's internal id, as data written before the rule could hold. */
const legacyImpostor = async (externalId: string) => {
  const [row] = await gw.query<{ id: string }>(
    "INSERT INTO profiles (external_id) VALUES ($1) RETURNING id::text AS id",
    [externalId]
  )
  return row!.id
}

describe("a UUID in a path", () => {
  it("always means the profile with that internal id, even when another profile has it as external id", async () => {
    const target = await create("uuid-target")
    const impostor = await legacyImpostor(target.id)
    await gw.request("PUT", `/api/profiles/${target.id}/traits/name`, { json: { value: "Target" } })

    const read = await gw.request<{ profile: ProfileJson }>("GET", `/api/profiles/${target.id}`)
    expect(read.body.profile).toMatchObject({ id: target.id, externalId: "uuid-target" })
    const upper = await gw.request<{ profile: ProfileJson }>("GET", `/api/profiles/${target.id.toUpperCase()}`)
    expect(upper.body.profile.id).toBe(target.id)
    const traits = await gw.request<{ traits: Array<{ key: string }> }>("GET", `/api/profiles/${target.id}/traits`)
    expect(traits.body.traits.map((t) => t.key)).toEqual(["name"])

    const removed = await gw.request<{ success: boolean; profile: { id: string; externalId: string } }>(
      "DELETE",
      `/api/profiles/${target.id}`
    )
    expect(removed.status).toBe(200)
    expect(removed.body).toMatchObject({ success: true, profile: { id: target.id, externalId: "uuid-target" } })
    expect(await gw.query("SELECT 1 FROM profiles WHERE id = $1", [target.id])).toHaveLength(0)
    expect(await gw.query("SELECT 1 FROM profiles WHERE id = $1", [impostor])).toHaveLength(1)
  })

  it("of no profile is a 404, never a profile that has it as external id", async () => {
    const uuid = randomUUID()
    const holder = await create(uuid)
    expect(holder.externalId).toBe(uuid)
    expectError(await gw.request("GET", `/api/profiles/${uuid}`), 404, "profile_not_found")
    expectError(await gw.request("DELETE", `/api/profiles/${uuid}`), 404, "profile_not_found")
    // Such a profile is reached by its internal id, found by searching its external id.
    const found = await gw.request<{ profiles: Array<ProfileJson> }>("GET", `/api/profiles?search=${uuid}`)
    expect(found.body.profiles.map((p) => p.id)).toEqual([holder.id])
  })
})

describe("DELETE /api/profiles/{id}", () => {
  it("names the profile it removed", async () => {
    const profile = await create("named-on-delete")
    const res = await gw.request<{ profile: { id: string; externalId: string } }>(
      "DELETE",
      "/api/profiles/named-on-delete"
    )
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      success: true,
      profile: { id: profile.id, externalId: "named-on-delete" },
      deleted: { traits: 0, memories: 0, messages: 0 }
    })
  })
})

describe("an external id equal to another profile's internal id", () => {
  it("is refused with 400 by POST /api/profiles, whatever the letter case and with spaces", async () => {
    const owner = await create("id-owner")
    for (const externalId of [owner.id, owner.id.toUpperCase(), `  ${owner.id} `]) {
      const before = await tableCounts(gw)
      const message = expectError(
        await gw.request("POST", "/api/profiles", { json: { externalId } }),
        400,
        "invalid_external_id"
      )
      expect(message).toContain("internal id")
      expect(await tableCounts(gw)).toEqual(before)
    }
  })

  it("is refused with 400 invalid_user_id by the proxy, from every source, before the provider is called", async () => {
    const owner = await create("id-owner-proxy")
    for (const [body, headers] of [
      [{}, { "x-service-id": owner.id }],
      [{ safety_identifier: owner.id }, {}],
      [{ user: owner.id.toUpperCase() }, {}],
      [{ metadata: { profile_id: owner.id } }, {}]
    ] as const) {
      const before = await tableCounts(gw)
      expectError(await chat(body, headers), 400, "invalid_user_id")
      expect(await tableCounts(gw)).toEqual(before)
    }
    expect(up.requests).toHaveLength(0)
  })

  it("does not stop a UUID that is nobody's internal id from being a user id", async () => {
    const uuid = randomUUID()
    expect(await profileOfReply(await chat({}, { "x-service-id": uuid }))).toBe(uuid)
  })
})

describe("a present but blank or invalid user id", () => {
  it.each([
    ["a blank header", { user: "from-body" }, { "x-service-id": " " }],
    ["an empty header", { user: "from-body" }, { "x-service-id": "" }],
    ["a blank safety_identifier", { safety_identifier: " ", user: "from-user" }, {}],
    ["a blank user", { user: "  ", metadata: { profile_id: "from-meta" } }, {}],
    ["a blank metadata.profile_id", { metadata: { profile_id: "\t" } }, {}],
    ["an invalid header", { user: "from-body" }, { "x-service-id": utf8HeaderValue("a\u200bb") }]
  ])("is a 400 invalid_user_id (%s), never a fall through to the next source", async (_, body, headers) => {
    const before = await tableCounts(gw)
    expectError(await chat(body, headers), 400, "invalid_user_id")
    expect(await tableCounts(gw)).toEqual(before)
    expect(up.requests).toHaveLength(0)
  })

  it("reaches the official client as a BadRequestError with code invalid_user_id", async () => {
    const client = new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": "   " }
    })
    const error = await client.chat.completions
      .create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }], user: "fallback" })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect(error).toMatchObject({ status: 400, code: "invalid_user_id" })
  })
})

describe("the longest user id", () => {
  it("is the same for the API, the proxy and the database's own check, counted in characters", async () => {
    const longest = (c: string) => c.repeat(MAX_USER_ID_LENGTH)
    expect((await create(longest("a"))).externalId).toBe(longest("a"))
    expect(await profileOfReply(await chat({ user: longest("😀") }))).toBe(longest("😀"))
    expectError(
      await gw.request("POST", "/api/profiles", { json: { externalId: `${longest("b")}b` } }),
      400,
      "invalid_external_id"
    )
    expectError(await chat({ user: `${longest("c")}c` }), 400, "invalid_user_id")
    // Rows written around the gateway meet the database's check, which holds the same bounds.
    await gw.query("INSERT INTO profiles (external_id) VALUES ($1)", [longest("é")])
    const refusedByCheck = { reason: { cause: { constraint: "profiles_external_id_check" } } }
    await expect(
      gw.query("INSERT INTO profiles (external_id) VALUES ($1)", [`${longest("d")}d`])
    ).rejects.toMatchObject(refusedByCheck)
    await expect(gw.query("INSERT INTO profiles (external_id) VALUES ('')")).rejects.toMatchObject(refusedByCheck)
  })
})

describe("one user, one profile, whatever the encoding", () => {
  it("José in a UTF-8 header, a Latin-1 header, the body, decomposed (NFD) and through /api is one profile", async () => {
    const nfc = "José"
    const nfd = "Jose\u0301"
    expect(await profileOfReply(await chat({}, { "x-service-id": utf8HeaderValue(nfc) }))).toBe(nfc)
    expect(await profileOfReply(await chat({}, { "x-service-id": nfc }))).toBe(nfc)
    expect(await profileOfReply(await chat({ user: nfc }))).toBe(nfc)
    expect(await profileOfReply(await chat({ user: nfd }))).toBe(nfc)
    expect(await profileOfReply(await chat({ metadata: { profile_id: nfd } }))).toBe(nfc)
    expect(await profileOfReply(await chat({}, { "x-service-id": utf8HeaderValue(nfd) }))).toBe(nfc)
    expect(await gw.query("SELECT 1 FROM profiles WHERE external_id IN ($1, $2)", [nfc, nfd])).toHaveLength(1)

    const viaApi = await gw.request<{ profile: ProfileJson }>("POST", "/api/profiles", { json: { externalId: nfd } })
    expect(viaApi.status).toBe(200)
    expect(viaApi.body.profile.externalId).toBe(nfc)
    const viaPath = await gw.request<{ profile: ProfileJson }>("GET", `/api/profiles/${encodeURIComponent(nfd)}`)
    expect(viaPath.body.profile.id).toBe(viaApi.body.profile.id)
  })

  const invisible = [
    ["a zero-width space", "a\u200bb"],
    ["a right-to-left override", "admin\u202eb"],
    ["a bidi isolate", "a\u2066b\u2069"],
    ["a left-to-right mark", "a\u200e"],
    ["a soft hyphen", "ad\u00admin"],
    ["a byte order mark inside", "a\ufeffb"],
    ["a control character", "a\u0007b"],
    ["a line separator", "a\u2028b"],
    ["a lone surrogate", "a\ud800b"]
  ] as const

  it.each(invisible)("with %s is refused on /v1 (header and body) and on /api, storing nothing", async (_, id) => {
    const before = await tableCounts(gw)
    expectError(await chat({ user: id }), 400, "invalid_user_id")
    expectError(await gw.request("POST", "/api/profiles", { json: { externalId: id } }), 400, "invalid_external_id")
    // HTTP clients refuse to send control characters in a header; a lone surrogate has no UTF-8 form
    // (in a path its bytes are not UTF-8, which the router answers with 404).
    if (!/[\u0000-\u001f\ud800-\udfff]/.test(id))
      expectError(await chat({}, { "x-service-id": utf8HeaderValue(id) }), 400, "invalid_user_id")
    if (id.isWellFormed())
      expectError(await gw.request("GET", `/api/profiles/${encodeURIComponent(id)}`), 400, "invalid_profile_id")
    expect(await tableCounts(gw)).toEqual(before)
    expect(up.requests).toHaveLength(0)
  })

  it("property: every user id either names the profile of its NFC form or is a 400 invalid_user_id storing nothing", async () => {
    const piece = fc.oneof(
      fc.constantFrom(...HOSTILE_PIECES, "José", "Jose\u0301", "ﬁ", "Å", "Å"),
      fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit))
    )
    const id = fc.oneof(
      fc.string({ unit: piece, maxLength: 8 }),
      fc.string({ unit: "binary", minLength: 1, maxLength: 20 })
    )
    await fc.assert(
      fc.asyncProperty(id, fc.boolean(), async (raw, inHeader) => {
        // HTTP clients refuse control characters in a header (HTTP strips its outer spaces and tabs).
        if (inHeader && /[\u0000-\u0008\u000a-\u001f\u007f]/.test(raw)) return
        const before = await tableCounts(gw)
        const res = inHeader ? await chat({}, { "x-service-id": utf8HeaderValue(raw) }) : await chat({ user: raw })
        if (res.status === 200) {
          // Sent as UTF-8, a lone surrogate arrives as U+FFFD (it has no UTF-8 form).
          const arrived = inHeader ? Buffer.from(raw, "utf8").toString("utf8") : raw
          expect(await profileOfReply(res)).toBe(arrived.trim().normalize("NFC"))
        } else {
          expectError(res, 400, "invalid_user_id")
          expect(await tableCounts(gw)).toEqual(before)
        }
      }),
      { numRuns: 150 }
    )
  }, 60_000)
})
