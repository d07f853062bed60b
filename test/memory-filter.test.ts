import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

/** An app that keeps a user's work and personal memories apart, by tags and metadata of its own. */
describe("memories with tags and metadata, and the filters on them", () => {
  let up: FakeUpstream
  let gw: TestGateway
  const ids: Record<string, string> = {}
  beforeAll(async () => {
    up = await startFakeUpstream()
    gw = await startGateway({ UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-upstream" })
    await gw.request("POST", "/api/profiles", { json: { externalId: "pat" } })
    for (const [name, memory] of Object.entries({
      deadline: {
        content: "Pat's Q3 report deadline is on Friday",
        type: "event",
        tags: ["work"],
        metadata: { source: "crm", priority: 2 }
      },
      birthday: { content: "Pat's sister has her birthday on Friday", type: "event", tags: ["personal", "family"] },
      pasta: { content: "Pat likes pasta on Fridays", type: "preference" }
    })) {
      const created = await gw.request<{ memory: { id: string; tags: Array<string>; metadata: unknown } }>(
        "POST",
        "/api/profiles/pat/memories",
        { json: memory }
      )
      expect(created.status).toBe(201)
      expect(created.body.memory.tags).toEqual(memory.tags ?? [])
      expect(created.body.memory.metadata).toEqual(memory.metadata ?? {})
      ids[name] = created.body.memory.id
    }
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
  })

  /** What the provider was told for a chat of pat's with this filter. */
  const injectedWith = async (memoryFilter?: unknown) => {
    const client = new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "x-service-id": "pat" }
    })
    await client.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "What is happening on Friday?" }],
      // @ts-expect-error the gateway's own options, not part of OpenAI's types
      service: memoryFilter === undefined ? undefined : { memoryFilter }
    })
    const sent = JSON.stringify(up.requests.at(-1)!.body)
    expect(sent).not.toContain("memoryFilter")
    return { work: sent.includes("Q3 report"), family: sent.includes("birthday"), pasta: sent.includes("pasta") }
  }

  it("injects only the memories the request's filter lets through", async () => {
    expect(await injectedWith()).toEqual({ work: true, family: true, pasta: true })
    expect(await injectedWith({ tags: { any: ["work"] } })).toEqual({ work: true, family: false, pasta: false })
    expect(await injectedWith({ tags: { any: ["personal", "work"] } })).toEqual({
      work: true,
      family: true,
      pasta: false
    })
    expect(await injectedWith({ tags: { all: ["personal", "family"] } })).toEqual({
      work: false,
      family: true,
      pasta: false
    })
    expect(await injectedWith({ metadata: { source: "crm", priority: 2 } })).toEqual({
      work: true,
      family: false,
      pasta: false
    })
    expect(await injectedWith({ metadata: { priority: "2" } })).toEqual({ work: false, family: false, pasta: false })
  })

  it("filters a search the same way, and follows a change of a memory's tags", async () => {
    const search = async (filter: unknown) =>
      (
        await gw.request<{ memories: Array<{ id: string }> }>("POST", "/api/profiles/pat/memories/search", {
          json: { query: "Friday", filter }
        })
      ).body.memories.map((memory) => memory.id)
    expect(await search({ tags: { any: ["family"] } })).toEqual([ids["birthday"]])
    const changed = await gw.request("PATCH", `/api/profiles/pat/memories/${ids["pasta"]}`, {
      json: { tags: ["family"] }
    })
    expect(changed.status).toBe(200)
    expect((await search({ tags: { any: ["family"] } })).sort()).toEqual([ids["birthday"], ids["pasta"]].sort())
    expect(await injectedWith({ tags: { any: ["family"] } })).toEqual({ work: false, family: true, pasta: true })
  })

  it("refuses labels or filters out of shape with 400, storing nothing", async () => {
    const before = await gw.counts()
    const tooMany = Array.from({ length: 21 }, (_, i) => `t${i}`)
    expectError(
      await gw.request("POST", "/api/profiles/pat/memories", { json: { content: "x", type: "fact", tags: tooMany } }),
      400,
      "invalid_tags"
    )
    expectError(
      await gw.request("POST", "/api/profiles/pat/memories", {
        json: { content: "x", type: "fact", metadata: { nested: { no: true } } }
      }),
      400,
      "invalid_metadata"
    )
    // A key out of shape is refused, not dropped (which would leave a memory's metadata cleared by an edit).
    const keyed = await gw.request("POST", "/api/profiles/pat/memories", {
      json: { content: "x", type: "fact", metadata: { "bad key!": "x" } }
    })
    expect(expectError(keyed, 400, "invalid_metadata")).toContain("keys of 1–64 letters")
    const filtered = await gw.request("POST", "/v1/chat/completions", {
      json: {
        model: "gpt-test",
        messages: [{ role: "user", content: "hi" }],
        service: { memoryFilter: { tags: { any: "work" } } }
      },
      headers: { "x-service-id": "pat" }
    })
    expect(expectError(filtered, 400, "invalid_service_options")).toContain("memoryFilter")
    expect(await gw.counts()).toEqual(before)
  })
})
