import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { injectedText } from "./support/injected.ts"
import { expectError } from "./support/wire.ts"

/** The console's "what would be injected": the block and the receipt the proxy would produce, without the proxy. */

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({ UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-preview", EMBEDDINGS: "off" })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})

interface Preview {
  readonly context: string | null
  readonly receipt: { profileId: string; memories: Array<string>; traits: Array<string>; summary: boolean } | null
  readonly refusal: unknown
}

const seed = async (externalId: string) => {
  await gw.request("POST", "/api/profiles", { json: { externalId } })
  await gw.request("PUT", `/api/profiles/${externalId}/traits/name`, { json: { value: "Ada" } })
  const memory = await gw.request<{ memory: { id: string } }>("POST", `/api/profiles/${externalId}/memories`, {
    json: { content: "Ada is allergic to peanuts", type: "fact", importance: 0.8 }
  })
  return memory.body.memory.id
}

describe("POST /api/profiles/{id}/preview", () => {
  it("shows exactly the block and receipt a chat completion would get, and changes nothing", async () => {
    const memoryId = await seed("previewed")
    const before = await gw.counts()
    const res = await gw.request<Preview>("POST", "/api/profiles/previewed/preview", {
      json: { message: "Any peanut-free snack ideas?" }
    })
    expect(res.status).toBe(200)
    expect(res.body.refusal).toBeNull()
    expect(res.body.context).toContain("Ada")
    expect(res.body.context).toContain("allergic to peanuts")
    expect(res.body.receipt).toMatchObject({ traits: ["name"], memories: [memoryId], summary: false })

    // The proxy, asked the same, injects the same block and reports the same receipt.
    up.enqueue({
      kind: "json",
      status: 200,
      body: {
        id: "c",
        object: "chat.completion",
        created: 1,
        model: "m",
        choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }]
      }
    })
    const proxied = await gw.request("POST", "/v1/chat/completions", {
      json: { model: "m", messages: [{ role: "user", content: "Any peanut-free snack ideas?" }] },
      headers: { "x-service-id": "previewed" }
    })
    // The proxy's receipt also says where the block went (a first message: nothing kept to put back).
    expect(JSON.parse(proxied.headers.get("x-service-context")!)).toEqual({
      ...res.body.receipt,
      placement: "latest",
      keptBlocks: 0,
      upstream: { target: "openai", attempts: 1 }
    })
    expect(injectedText(up.requests[0]!.body)).toBe(res.body.context)
    up.reset()

    // The preview itself stored nothing and called no provider.
    expect(await gw.counts()).toEqual({ ...before, messages: before.messages + 2 })
    expect(up.requests).toHaveLength(0)
  })

  it("marks no memory as used, where a request does", async () => {
    const previewed = await seed("preview-only")
    const requested = await seed("requested-after")
    await gw.request("POST", "/api/profiles/preview-only/preview", {
      json: { message: "Any peanut-free snack ideas?" }
    })
    up.enqueue({
      kind: "json",
      status: 200,
      body: {
        id: "c",
        object: "chat.completion",
        created: 1,
        model: "m",
        choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }]
      }
    })
    await gw.request("POST", "/v1/chat/completions", {
      json: { model: "m", messages: [{ role: "user", content: "Any peanut-free snack ideas?" }] },
      headers: { "x-service-id": "requested-after" }
    })
    const accessedAt = (id: string) =>
      gw
        .query<{ last_accessed_at: Date | null }>("SELECT last_accessed_at FROM memories WHERE id = $1", [id])
        .then(([row]) => row!.last_accessed_at)
    // Uses are written in order: once the request's is there, a preview's would be too.
    await eventually(async () => (await accessedAt(requested)) ?? undefined)
    expect(await accessedAt(previewed)).toBeNull()
  })

  it("refuses a missing or empty message and an unknown profile", async () => {
    await seed("preview-errors")
    expectError(await gw.request("POST", "/api/profiles/preview-errors/preview", { json: {} }), 400, "missing_message")
    expectError(
      await gw.request("POST", "/api/profiles/preview-errors/preview", { json: { message: "" } }),
      400,
      "invalid_message"
    )
    expectError(
      await gw.request("POST", "/api/profiles/nobody-here/preview", { json: { message: "hi" } }),
      404,
      "profile_not_found"
    )
  })
})
