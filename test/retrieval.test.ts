import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { injectedText } from "./support/injected.ts"
import { expectError, type MemoryJson } from "./support/wire.ts"

/**
 * Retrieval with the real local model (it ships in node_modules): memories are embedded in the
 * background, and a message finds them by meaning as well as by words.
 */

let gw: TestGateway
let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
  gw = await startGateway({ UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-test", EMBEDDINGS: "local" })
})
afterAll(async () => {
  await gw.close()
  await up.close()
})
beforeEach(() => up.reset())

const MEMORIES = [
  "User plays the cello in a community orchestra.",
  "User is allergic to peanuts.",
  "User's dog Rex is a border collie.",
  "User works as a nurse on night shifts.",
  "User supports Liverpool football club.",
  "User drives an old Volvo estate.",
  "User is learning Japanese for a trip next year.",
  "User's sister is called Ines.",
  "User prefers aisle seats on planes.",
  "User hates coriander.",
  "User runs three times a week.",
  "User's laptop is a 2019 MacBook Air.",
  "User grows tomatoes on the balcony."
]

interface Receipt {
  readonly memories: ReadonlyArray<string>
  readonly summary: boolean
  readonly traits: ReadonlyArray<string>
  readonly retrieval: string
  readonly semantic?: string
}

let counter = 0
/** A profile with the memories above (more than INJECTION_MAX_MEMORIES, so they are ranked), embedded. */
const embeddedUser = async (gateway: TestGateway = gw) => {
  const id = `retrieval-${++counter}`
  await gateway.request("POST", "/api/profiles", { json: { externalId: id } })
  await gateway.request("PATCH", `/api/profiles/${id}`, { json: { summary: "A nurse from Leeds." } })
  await gateway.request("PUT", `/api/profiles/${id}/traits/name`, { json: { value: "Sam" } })
  const res = await gateway.request<{ memories: Array<MemoryJson> }>("POST", `/api/profiles/${id}/memories/import`, {
    json: { memories: MEMORIES.map((content) => ({ content, type: "fact" })) }
  })
  expect(res.status).toBe(201)
  await embeddingsDone(gateway, id)
  return { id, memories: res.body.memories }
}

/** Waits until the profile's embed jobs have finished. */
const embeddingsDone = (gateway: TestGateway, externalId: string) =>
  eventually(async () => {
    const jobs = await gateway.query<{ status: string }>(
      `SELECT j.status FROM extraction_jobs j JOIN profiles p ON p.id = j.profile_id
       WHERE p.external_id = $1 AND j.kind = 'embed'`,
      [externalId]
    )
    return jobs.length > 0 && jobs.every((job) => job.status === "succeeded") ? true : undefined
  }, 20_000)

/** A second gateway on the same database that embeds no memories (EMBEDDING_CONCURRENCY=0: `gw` does), only queries. */
const queryOnlyGateway = (env: Record<string, string> = {}) =>
  startGateway(
    { UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-test", EMBEDDINGS: "local", EMBEDDING_CONCURRENCY: "0", ...env },
    { databaseUrl: gw.databaseUrl }
  )

/** Threads running the local model (`gateway_embedding_threads`). */
const modelThreads = async (gateway: TestGateway) => {
  const res = await gateway.request<string>("GET", "/metrics")
  const line = res.text.split("\n").find((candidate) => candidate.startsWith("gateway_embedding_threads "))
  return Number(line?.slice("gateway_embedding_threads ".length))
}

const ask = async (userId: string, question: string, gateway: TestGateway = gw) => {
  const client = new OpenAI({
    baseURL: `${gateway.baseUrl}/v1`,
    apiKey: "unused",
    maxRetries: 0,
    defaultHeaders: { "X-Service-Id": userId }
  })
  up.reset()
  const { response } = await client.chat.completions
    .create({ model: "gpt-test", messages: [{ role: "user", content: question }] })
    .withResponse()
  const block = injectedText(up.requests[0]!.body)
  return {
    receipt: JSON.parse(response.headers.get("x-service-context")!) as Receipt,
    memoryLines: block.split("\n").filter((line) => line.startsWith("- (")),
    block
  }
}

const search = (userId: string, body: unknown) =>
  gw.request<{
    memories: Array<MemoryJson & { score: number; relevant: boolean; scoreParts: Record<string, number | null> }>
    retrieval: { mode: string; semantic: string; period: { from: string; to: string; phrase: string } | null }
  }>("POST", `/api/profiles/${userId}/memories/search`, { json: body })

describe("memory vectors", () => {
  it("are computed in the background when memories are written, one per memory, for the local model", async () => {
    const { id, memories } = await embeddedUser()
    const vectors = await gw.query<{ memory_id: string; model: string; dimensions: number; bytes: number }>(
      `SELECT v.memory_id::text, v.model, v.dimensions, length(v.vector) AS bytes FROM memory_vectors v
       JOIN profiles p ON p.id = v.profile_id WHERE p.external_id = $1`,
      [id]
    )
    expect(vectors.map((v) => v.memory_id).sort()).toEqual(memories.map((m) => m.id).sort())
    expect(
      vectors.every(
        (v) => v.model.startsWith("local/universal-sentence-encoder-lite@") && v.dimensions === 512 && v.bytes === 512
      )
    ).toBe(true)
    // The job is visible to operators.
    const jobs = await gw.request<{ jobs: Array<{ kind: string; profileId: string; result: { embedded: number } }> }>(
      "GET",
      "/api/jobs?status=succeeded&limit=100"
    )
    expect(jobs.body.jobs.some((job) => job.kind === "embed" && job.result.embedded === MEMORIES.length)).toBe(true)
  })
})

describe("injection by meaning", () => {
  it("finds the memory that answers a question sharing no word with it", async () => {
    const { id } = await embeddedUser()
    const { memoryLines, receipt } = await ask(id, "Which breed of puppy suits me?")
    expect(receipt.retrieval).toBe("fused")
    expect(memoryLines[0]).toBe("- (fact) User's dog Rex is a border collie.")
    const second = await ask(id, "What vegetables can I plant in pots?")
    expect(second.memoryLines[0]).toBe("- (fact) User grows tomatoes on the balcony.")
  })

  it("reads a follow-up that names nothing in the light of the conversation before it", async () => {
    const { id } = await embeddedUser()
    const client = new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": id }
    })
    const memoryLinesOf = async (messages: Array<{ role: "user" | "assistant"; content: string }>) => {
      up.reset()
      await client.chat.completions.create({ model: "gpt-test", messages })
      return injectedText(up.requests[0]!.body)
        .split("\n")
        .filter((line) => line.startsWith("- ("))
    }
    const followUp = "What should I feed him, and how often?"
    // On its own, the follow-up is about nobody in particular.
    expect((await memoryLinesOf([{ role: "user", content: followUp }]))[0]).not.toBe(
      "- (fact) User's dog Rex is a border collie."
    )
    // After a turn about the dog, it is about the dog.
    const opening = "My border collie Rex has been lazy lately."
    await memoryLinesOf([{ role: "user", content: opening }])
    const lines = await memoryLinesOf([
      { role: "user", content: opening },
      { role: "assistant", content: "Collies need a lot of exercise; a change in energy is worth watching." },
      { role: "user", content: followUp }
    ])
    expect(lines[0]).toBe("- (fact) User's dog Rex is a border collie.")
  })

  it("does not run the model when the keywords alone are confident, and says so", async () => {
    // It starts its model's thread for its first query only.
    const other = await queryOnlyGateway()
    try {
      const { id } = await embeddedUser()
      const { memoryLines, receipt } = await ask(id, "Which community orchestra do I play the cello in?", other)
      expect(receipt).toMatchObject({ retrieval: "keyword", semantic: "not_needed" })
      expect(memoryLines[0]).toBe("- (fact) User plays the cello in a community orchestra.")
      // No vector was computed for the message: the model never started.
      expect(await modelThreads(other)).toBe(0)
    } finally {
      await other.close()
    }
  })

  it("injects no memory for a question none of them answers, but still the summary and traits", async () => {
    const { id } = await embeddedUser()
    const { receipt } = await ask(id, "What is the square root of 144?")
    expect(receipt).toMatchObject({ retrieval: "fused", memories: [], summary: true, traits: ["name"] })
  })

  it("goes on with keyword ranking when the query vector is late, and says so", async () => {
    // Late for sure: this gateway's model thread first starts for this request's query — hundreds of times
    // the 1 ms it is given. (Taking embed jobs, it could have warmed up and answered a short query within
    // the millisecond.)
    const slow = await queryOnlyGateway({ EMBEDDING_QUERY_TIMEOUT_MS: "1" })
    try {
      const { id } = await embeddedUser()
      const { memoryLines, receipt } = await ask(id, "Remind me about my cello", slow)
      expect(receipt).toMatchObject({ retrieval: "keyword", semantic: "timeout" })
      expect(memoryLines[0]).toBe("- (fact) User plays the cello in a community orchestra.")
    } finally {
      await slow.close()
    }
  })
})

describe("POST /api/profiles/{id}/memories/search", () => {
  it("ranks exactly as injection does, with the parts of each score", async () => {
    const { id } = await embeddedUser()
    const res = await search(id, { query: "Which breed of puppy suits me?", limit: 5 })
    expect(res.status).toBe(200)
    expect(res.body.retrieval).toEqual({ mode: "fused", semantic: "used", period: null, unembedded: 0 })
    expect(res.body.memories).toHaveLength(5)
    const [best] = res.body.memories
    expect(best).toMatchObject({
      content: "User's dog Rex is a border collie.",
      type: "fact",
      relevant: true,
      supersededBy: null
    })
    expect(best!.scoreParts["semantic"]).toBeGreaterThan(0)
    expect(res.body.memories.map((m) => m.score)).toEqual(
      [...res.body.memories.map((m) => m.score)].sort((a, b) => b - a)
    )
    const injected = await ask(id, "Which breed of puppy suits me?")
    expect(injected.receipt.memories).toEqual(res.body.memories.filter((m) => m.relevant).map((m) => m.id))
  })

  it("filters by type, explains the period a question names, and rejects bad input", async () => {
    const { id } = await embeddedUser()
    await gw.request("POST", `/api/profiles/${id}/memories`, {
      json: {
        content: "User went to a Liverpool match",
        type: "event",
        occurredAt: new Date(Date.now() - 86_400_000).toISOString()
      }
    })
    const res = await search(id, { query: "What did I do yesterday?", type: "event" })
    expect(res.body.memories.map((m) => m.content)).toEqual(["User went to a Liverpool match"])
    expect(res.body.memories[0]!.scoreParts["time"]).toBe(1)
    expect(res.body.retrieval.period?.phrase).toBe("yesterday")

    expectError(await search(id, {}), 400, "missing_query")
    expectError(await search(id, { query: "" }), 400, "invalid_query")
    expectError(await search(id, { query: "x", limit: 0 }), 400, "invalid_limit")
    expectError(await search(id, { query: "x", limit: 101 }), 400, "invalid_limit")
    expectError(await search(id, { query: "x", type: "opinion" }), 400, "invalid_type")
    expectError(await search("ghost", { query: "x" }), 404, "profile_not_found")
  })

  it("answers from the context a request cached, sees a memory written after it, and nothing once erased", async () => {
    const { id } = await embeddedUser()
    await ask(id, "Which breed of puppy suits me?") // the user's context is cached now
    const added = await gw.request("POST", `/api/profiles/${id}/memories`, {
      json: { content: "User adopted a second dog called Juno.", type: "fact" }
    })
    expect(added.status).toBe(201)
    const res = await search(id, { query: "Is Juno my dog?" })
    expect(res.body.memories[0]?.content).toBe("User adopted a second dog called Juno.")
    expect((await gw.request("DELETE", `/api/profiles/${id}`)).status).toBe(200)
    expectError(await search(id, { query: "Is Juno my dog?" }), 404, "profile_not_found")
  })
})

describe("facts that change", () => {
  it("never injects a superseded memory, keeps it in the export, and brings it back if its successor goes", async () => {
    const { id } = await embeddedUser()
    const lisbon = (
      await gw.request<{ memory: MemoryJson }>("POST", `/api/profiles/${id}/memories`, {
        json: { content: "User lives in Lisbon.", type: "fact" }
      })
    ).body.memory
    const berlin = await gw.request<{ memory: MemoryJson }>("POST", `/api/profiles/${id}/memories`, {
      json: {
        content: "User moved to Berlin.",
        type: "fact",
        supersedes: [lisbon.id],
        cues: ["where I live", "home city"]
      }
    })
    expect(berlin.status).toBe(201)
    await embeddingsDone(gw, id)

    const { memoryLines } = await ask(id, "Which city do I live in?")
    expect(memoryLines).toContain("- (fact) User moved to Berlin.")
    expect(memoryLines).not.toContain("- (fact) User lives in Lisbon.")
    const exported = await gw.request<{ memories: Array<MemoryJson & { supersededBy: string | null }> }>(
      "GET",
      `/api/profiles/${id}/export`
    )
    expect(exported.body.memories.find((m) => m.id === lisbon.id)!.supersededBy).toBe(berlin.body.memory.id)
    const searched = await search(id, { query: "Which city do I live in?", limit: 100 })
    expect(searched.body.memories.map((m) => m.id)).not.toContain(lisbon.id)

    await gw.request("DELETE", `/api/profiles/${id}/memories/${berlin.body.memory.id}`)
    const revived = await search(id, { query: "Which city do I live in?", limit: 3 })
    expect(revived.body.memories[0]!.id).toBe(lisbon.id)
  })

  it("refuses to supersede a memory the profile does not have, and stores nothing", async () => {
    const { id } = await embeddedUser()
    const other = await embeddedUser()
    const before = await gw.counts()
    const res = await gw.request("POST", `/api/profiles/${id}/memories`, {
      json: { content: "User moved to Berlin.", type: "fact", supersedes: [other.memories[0]!.id] }
    })
    expectError(res, 400, "invalid_supersedes")
    expectError(
      await gw.request("POST", `/api/profiles/${id}/memories`, {
        json: { content: "x", type: "fact", supersedes: ["not-a-uuid"] }
      }),
      400,
      "invalid_supersedes"
    )
    expect(await gw.counts()).toEqual(before)
  })
})

describe("time", () => {
  it("injects what happened in the period a question names, with its date", async () => {
    const { id } = await embeddedUser()
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)
    await gw.request("POST", `/api/profiles/${id}/memories/import`, {
      json: {
        memories: [
          { content: "User went bouldering with Sam.", type: "event", occurredAt: yesterday },
          { content: "User went to a jazz concert.", type: "event", occurredAt: "2025-06-01" }
        ]
      }
    })
    await embeddingsDone(gw, id)
    const { memoryLines } = await ask(id, "What did I do yesterday?")
    expect(memoryLines[0]).toBe(`- (event, ${yesterday}) User went bouldering with Sam.`)
    expect(memoryLines.some((line) => line.includes("jazz"))).toBe(false)
  })
})

describe("PATCH /api/profiles/{id}/memories/{memoryId}", () => {
  it("changes a memory and embeds its new text again", async () => {
    const { id, memories } = await embeddedUser()
    const target = memories.find((m) => m.content.includes("Volvo"))!
    const hashOf = async () =>
      (
        await gw.query<{ content_hash: string }>("SELECT content_hash FROM memory_vectors WHERE memory_id = $1", [
          target.id
        ])
      )[0]?.content_hash
    const before = await hashOf()
    const res = await gw.request<{ memory: MemoryJson & { cues: Array<string> } }>(
      "PATCH",
      `/api/profiles/${id}/memories/${target.id}`,
      {
        json: { content: "User drives an electric Kia.", importance: 0.8, cues: ["charging", "road trips"] }
      }
    )
    expect(res.status).toBe(200)
    expect(res.body.memory).toMatchObject({
      id: target.id,
      content: "User drives an electric Kia.",
      importance: 0.8,
      type: "fact",
      cues: ["charging", "road trips"]
    })
    await eventually(async () => ((await hashOf()) !== before ? true : undefined), 20_000)
    const { memoryLines } = await ask(id, "Where can I plug in my car?")
    expect(memoryLines[0]).toBe("- (fact) User drives an electric Kia.")
  })

  it("rejects an empty or invalid change and an unknown memory", async () => {
    const { id, memories } = await embeddedUser()
    const path = `/api/profiles/${id}/memories/${memories[0]!.id}`
    expectError(await gw.request("PATCH", path, { json: {} }), 400, "invalid_request_body")
    expectError(await gw.request("PATCH", path, { json: { type: "opinion" } }), 400, "invalid_type")
    expectError(await gw.request("PATCH", path, { json: { content: "  " } }), 400, "invalid_content")
    expectError(await gw.request("PATCH", path, { json: { occurredAt: "last Tuesday" } }), 400, "invalid_occurred_at")
    expectError(
      await gw.request("PATCH", `/api/profiles/${id}/memories/00000000-0000-4000-8000-000000000000`, {
        json: { importance: 1 }
      }),
      404,
      "memory_not_found"
    )
    expectError(
      await gw.request("PATCH", `/api/profiles/${id}/memories/nope`, { json: { importance: 1 } }),
      404,
      "memory_not_found"
    )
  })
})
