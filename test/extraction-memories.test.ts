import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { trigramSimilarity } from "../src/extraction/prepareMemories.ts"
import {
  completion,
  eventually,
  type FakeUpstream,
  modelReply,
  type RecordedRequest,
  startFakeUpstream
} from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import type { MemoryJson } from "./support/wire.ts"

/**
 * How extracted memories join what is known, with the real local model: the extraction model is
 * shown the closest memories under refs it can name as superseded, dates are kept, cues stored,
 * and a reworded repeat is recognised by its vector.
 */

let gw: TestGateway
let chat: FakeUpstream
let model: FakeUpstream
beforeAll(async () => {
  chat = await startFakeUpstream()
  model = await startFakeUpstream()
  gw = await startGateway({
    UPSTREAM_BASE_URL: chat.url,
    UPSTREAM_API_KEY: "sk-test-upstream",
    EXTRACTION_BASE_URL: model.url,
    EXTRACTION_API_KEY: "sk-test-extraction",
    EXTRACTION_CONCURRENCY: "1",
    SUMMARY_EVERY_CHANGES: "1000",
    EMBEDDINGS: "local"
  })
})
afterAll(async () => {
  await gw.close()
  await chat.close()
  await model.close()
})

interface KnownMemory {
  readonly ref: string
  readonly content: string
}
/** What the extraction model was given (summary calls carry no known memories). */
const inputOf = (request: RecordedRequest) =>
  JSON.parse((request.body!["messages"] as Array<{ content: string }>)[1]!.content) as {
    known_memories?: Array<KnownMemory>
  }

/** The extraction model's answer to the next call, computed from what it is shown. */
let answer: (known: ReadonlyArray<KnownMemory>) => unknown = () => ({ traits: [], memories: [] })
beforeEach(() => {
  chat.reset()
  model.reset()
  model.handler = (request) => {
    const known = inputOf(request).known_memories
    return modelReply(known === undefined ? { summary: "A summary." } : answer(known))
  }
})

let counter = 0
const userWith = async (memories: ReadonlyArray<string>) => {
  const id = `merge-${++counter}`
  await gw.request("POST", "/api/profiles", { json: { externalId: id } })
  if (memories.length > 0) {
    await gw.request("POST", `/api/profiles/${id}/memories/import`, {
      json: { memories: memories.map((content) => ({ content, type: "fact" })) }
    })
  }
  // Embedded, so the extraction worker can compare vectors.
  await eventually(async () => {
    const rows = await gw.query<{ pending: number }>(
      `SELECT count(*)::int AS pending FROM memories m JOIN profiles p ON p.id = m.profile_id
       LEFT JOIN memory_vectors v ON v.memory_id = m.id WHERE p.external_id = $1 AND v.memory_id IS NULL`,
      [id]
    )
    return rows[0]!.pending === 0 ? true : undefined
  }, 20_000)
  return id
}

/** A chat turn, then its extraction job finished. */
const say = async (user: string, text: string) => {
  chat.enqueue({ kind: "json", status: 200, body: completion({ content: "Noted." }) })
  const res = await gw.request("POST", "/v1/chat/completions", {
    json: { model: "gpt-test", messages: [{ role: "user", content: text }] },
    headers: { "x-service-id": user }
  })
  expect(res.status).toBe(200)
  return eventually(async () => {
    const jobs = await gw.query<{
      status: string
      result: { memories: { created: number; reinforced: number }; dropped: Array<string> }
    }>(
      `SELECT j.status, j.result FROM extraction_jobs j JOIN profiles p ON p.id = j.profile_id
       WHERE p.external_id = $1 AND j.kind = 'turn'`,
      [user]
    )
    return jobs[0]?.status === "succeeded" ? jobs[0].result : undefined
  }, 20_000)
}

const memoriesOf = async (user: string) =>
  (
    await gw.request<{
      memories: Array<MemoryJson & { cues: Array<string>; occurredAt: string | null; supersededBy: string | null }>
    }>("GET", `/api/profiles/${user}/memories?limit=100`)
  ).body.memories

describe("the spelling check", () => {
  it("measures similarity as PostgreSQL's pg_trgm does", async () => {
    const pairs = [
      ["The user has a dog named Rex", "the user has a dog called Rex."],
      ["User lives in Lisbon.", "User lives in Berlin."],
      ["Café crème", "cafe creme!"],
      ["", "anything"],
      ["Works at ACME-42", "works at acme 42"]
    ] as const
    for (const [a, b] of pairs) {
      const [row] = await gw.query<{ similarity: number }>("SELECT similarity($1, $2) AS similarity", [a, b])
      expect(trigramSimilarity(a, b), `${a} / ${b}`).toBeCloseTo(row!.similarity, 5)
    }
  })
})

describe("extracted memories", () => {
  it("supersede the known memories the model names by ref, and keep their date and cues", async () => {
    const user = await userWith(["User lives in Lisbon.", "User plays the cello.", "User has two cats."])
    let shown: ReadonlyArray<KnownMemory> = []
    answer = (known) => {
      shown = known
      const lisbon = known.find((memory) => memory.content.includes("Lisbon"))!
      return {
        traits: [],
        memories: [
          {
            content: "The user moved to Berlin on 2026-11-20.",
            type: "event",
            importance: 0.8,
            occurred_at: "2026-11-20",
            cues: ["home city", "where I live"],
            supersedes: [lisbon.ref, "m99"]
          }
        ]
      }
    }
    const result = await say(user, "I moved to Berlin three days ago!")
    expect(result.memories).toEqual({ created: 1, reinforced: 0 })
    expect(result.dropped).toEqual(["memories: supersedes names unknown ref 'm99'"])
    // The model saw the profile's memories under short refs, the closest to what was said first.
    expect(shown.map((memory) => memory.ref)).toEqual(["m1", "m2", "m3"])
    expect(shown[0]!.content).toBe("User lives in Lisbon.")

    const memories = await memoriesOf(user)
    const berlin = memories.find((memory) => memory.content.includes("Berlin"))!
    expect(berlin).toMatchObject({
      type: "event",
      occurredAt: "2026-11-20T00:00:00.000Z",
      cues: ["home city", "where I live"],
      supersededBy: null
    })
    expect(memories.find((memory) => memory.content.includes("Lisbon"))!.supersededBy).toBe(berlin.id)
    // Its vector was written with it, in the same transaction.
    expect(await gw.query("SELECT 1 FROM memory_vectors WHERE memory_id = $1", [berlin.id])).toHaveLength(1)
  })

  it("keep a memory whose date is not a date, without the date", async () => {
    const user = await userWith([])
    answer = () => ({
      traits: [],
      memories: [
        { content: "The user started pottery classes.", type: "event", importance: 0.5, occurred_at: "last spring" }
      ]
    })
    const result = await say(user, "I started pottery classes last spring")
    expect(result.memories.created).toBe(1)
    expect(result.dropped[0]).toContain("occurred_at 'last spring' is not a date")
    expect((await memoriesOf(user))[0]).toMatchObject({
      content: "The user started pottery classes.",
      occurredAt: null
    })
  })

  it("reinforce a reworded memory found by its vector, but never merge facts that name different things", async () => {
    const user = await userWith([
      "User's favourite band is Radiohead.",
      "User works as a senior data engineer at Acme."
    ])
    const [{ similarity }] = (await gw.query<{ similarity: number }>("SELECT similarity($1, $2) AS similarity", [
      "User's favourite band is Radiohead.",
      "User likes Radiohead more than any other band."
    ])) as [{ similarity: number }]
    // Too different in spelling for the trigram check: only the vectors can tell.
    expect(similarity).toBeLessThan(0.6)
    answer = () => ({
      traits: [],
      memories: [
        { content: "User likes Radiohead more than any other band.", type: "preference", importance: 0.6 },
        { content: "User works as a senior data engineer at Globex.", type: "fact", importance: 0.7 }
      ]
    })
    const result = await say(
      user,
      "Radiohead is still my favourite. Oh, and I joined Globex as a senior data engineer."
    )
    expect(result.memories).toEqual({ created: 1, reinforced: 1 })
    const contents = (await memoriesOf(user)).map((memory) => memory.content).sort()
    expect(contents).toEqual([
      "User works as a senior data engineer at Acme.",
      "User works as a senior data engineer at Globex.",
      "User's favourite band is Radiohead."
    ])
  })
})
