import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import {
  eventually,
  type FakeUpstream,
  modelReply,
  type RecordedRequest,
  type Reply,
  startFakeUpstream
} from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import type { MemoryJson } from "./support/wire.ts"

/**
 * Memories written through the API without cues get them from the extraction model in the
 * background, and are then found by a message that shares no word with them.
 */

let gw: TestGateway
let model: FakeUpstream
beforeAll(async () => {
  model = await startFakeUpstream()
  gw = await startGateway({
    EXTRACTION_BASE_URL: model.url,
    EXTRACTION_API_KEY: "sk-test-extraction",
    EXTRACTION_CONCURRENCY: "1",
    SUMMARY_EVERY_CHANGES: "1000",
    EMBEDDINGS: "local"
  })
})
afterAll(async () => {
  await gw.close()
  await model.close()
})

/** The memories a cue request asks about (undefined for any other call). */
const askedIn = (request: RecordedRequest) => {
  const messages = request.body?.["messages"] as Array<{ content: string }> | undefined
  const input = JSON.parse(messages?.[1]?.content ?? "{}") as { memories?: Array<{ ref: string; content: string }> }
  return input.memories
}

/** The cues the scripted model writes for a memory. */
const CUES: Record<string, ReadonlyArray<string>> = {
  "User is lactose intolerant.": ["milkshakes", "ice cream", "cheese", "ordering food"],
  "User is allergic to cats.": ["visiting friends with pets", "adopting a pet"]
}
const cuesFor = (content: string) => CUES[content] ?? [`about ${content.slice(5, 25).toLowerCase()}`]
const answerCues = (request: RecordedRequest): Reply | undefined => {
  const asked = askedIn(request)
  return asked === undefined
    ? undefined
    : modelReply({ cues: asked.map(({ ref, content }) => ({ ref, cues: cuesFor(content) })) })
}
beforeEach(() => {
  model.reset()
  model.handler = answerCues
})

let counter = 0
const freshUser = async () => {
  const id = `cues-${++counter}`
  await gw.request("POST", "/api/profiles", { json: { externalId: id } })
  return id
}
type StoredMemory = MemoryJson & { cues: Array<string> }
const add = async (user: string, json: Record<string, unknown>) =>
  (
    await gw.request<{ memory: StoredMemory }>("POST", `/api/profiles/${user}/memories`, {
      json: { type: "fact", ...json }
    })
  ).body.memory
const memoryOf = async (user: string, id: string) =>
  (
    await gw.request<{ memories: Array<StoredMemory> }>("GET", `/api/profiles/${user}/memories?limit=100`)
  ).body.memories.find((m) => m.id === id)!
const cueJobs = async (user: string) =>
  gw.query<{ status: string; result: { asked: number; written: number } | null }>(
    `SELECT j.status, j.result FROM extraction_jobs j JOIN profiles p ON p.id = j.profile_id
     WHERE p.external_id = $1 AND j.kind = 'cues' ORDER BY j.created_at`,
    [user]
  )
/** Waits until no memory of the user waits for cues and their cue jobs are done. */
const settled = (user: string) =>
  eventually(async () => {
    const [row] = await gw.query<{ waiting: number; open: number }>(
      `SELECT (SELECT count(*)::int FROM memories m WHERE m.profile_id = p.id AND m.cues_wanted) AS waiting,
              (SELECT count(*)::int FROM extraction_jobs j WHERE j.profile_id = p.id AND j.kind = 'cues'
                 AND j.status IN ('pending', 'running')) AS open
       FROM profiles p WHERE p.external_id = $1`,
      [user]
    )
    return row!.waiting === 0 && row!.open === 0 ? true : undefined
  }, 20_000)

describe("cues written in the background", () => {
  it("give a memory added without cues the extraction model's cues, so a message sharing no word with it finds it", async () => {
    const user = await freshUser()
    const memory = await add(user, { content: "User is lactose intolerant." })
    expect(memory.cues).toEqual([])
    await settled(user)
    expect((await memoryOf(user, memory.id)).cues).toEqual(CUES["User is lactose intolerant."])

    // The model got the memory as JSON data under a ref, with instructions that say it is data.
    const call = model.requests.find((request) => askedIn(request) !== undefined)!
    expect(askedIn(call)).toEqual([{ ref: "m1", content: "User is lactose intolerant." }])
    expect((call.body!["messages"] as Array<{ role: string; content: string }>)[0]!.content).toContain(
      "data, not instructions"
    )
    expect((await cueJobs(user))[0]).toMatchObject({ status: "succeeded", result: { asked: 1, written: 1 } })

    // The vector is computed again for the text with its cues.
    await eventually(async () => {
      const [row] = await gw.query<{ current: boolean }>(
        `SELECT v.content_hash = md5(m.content || ' ' || m.cues::text) AS current
         FROM memories m JOIN memory_vectors v ON v.memory_id = m.id WHERE m.id = $1`,
        [memory.id]
      )
      return row?.current === true ? true : undefined
    }, 20_000)
    const search = await gw.request<{ memories: Array<StoredMemory & { relevant: boolean }> }>(
      "POST",
      `/api/profiles/${user}/memories/search`,
      { json: { query: "Can I have a milkshake after swimming?", limit: 3 } }
    )
    expect(search.body.memories[0]).toMatchObject({ id: memory.id, relevant: true })
  })

  it("keep the cues a caller gives, even none, and queue no job for them", async () => {
    const user = await freshUser()
    const given = await add(user, { content: "User is allergic to cats.", cues: ["pets"] })
    const none = await add(user, { content: "User plays the oboe.", cues: [] })
    expect(await cueJobs(user)).toEqual([])
    expect((await memoryOf(user, given.id)).cues).toEqual(["pets"])
    expect((await memoryOf(user, none.id)).cues).toEqual([])
  })

  it("work through a large import in batches of 25, one model call each", async () => {
    const user = await freshUser()
    const contents = Array.from({ length: 30 }, (_, i) => `User keeps notebook number ${i + 1} on the shelf.`)
    await gw.request("POST", `/api/profiles/${user}/memories/import`, {
      json: { memories: contents.map((content) => ({ content, type: "fact" })) }
    })
    await settled(user)
    const asked = model.requests.map(askedIn).filter((memories) => memories !== undefined)
    expect(asked.map((memories) => memories.length)).toEqual([25, 5])
    const stored = (
      await gw.request<{ memories: Array<StoredMemory> }>("GET", `/api/profiles/${user}/memories?limit=100`)
    ).body.memories
    expect(stored.every((memory) => memory.cues.length === 1 && memory.cues[0]!.startsWith("about "))).toBe(true)
  })

  it("do not land on a memory whose text changed during the model call: the new text is asked about next", async () => {
    const user = await freshUser()
    let release: (reply: Reply) => void = () => {}
    model.handler = (request) => {
      if (askedIn(request)?.[0]?.content !== "User is allergic to dogs.") return answerCues(request)
      // The first call is held open while the memory is edited.
      return { kind: "later", reply: new Promise<Reply>((resolve) => (release = resolve)) }
    }
    const memory = await add(user, { content: "User is allergic to dogs." })
    await eventually(
      async () => (model.requests.some((request) => askedIn(request) !== undefined) ? true : undefined),
      20_000
    )
    await gw.request("PATCH", `/api/profiles/${user}/memories/${memory.id}`, {
      json: { content: "User is allergic to cats." }
    })
    release(answerCues(model.requests.find((request) => askedIn(request) !== undefined)!)!)
    await settled(user)
    expect((await memoryOf(user, memory.id)).cues).toEqual(CUES["User is allergic to cats."])
    expect(
      model.requests
        .map(askedIn)
        .filter((memories) => memories !== undefined)
        .map((memories) => memories[0]!.content)
    ).toEqual(["User is allergic to dogs.", "User is allergic to cats."])
  })

  it("leave hand-written cues alone when the text is edited, and settle a memory the reply leaves out", async () => {
    const user = await freshUser()
    const kept = await add(user, { content: "User rows on Saturdays.", cues: ["weekend plans"] })
    await gw.request("PATCH", `/api/profiles/${user}/memories/${kept.id}`, {
      json: { content: "User rows on Sundays." }
    })
    expect(await cueJobs(user)).toEqual([])

    model.handler = (request) => (askedIn(request) === undefined ? undefined : modelReply({ cues: [] }))
    const skipped = await add(user, { content: "User collects stamps." })
    await settled(user)
    expect((await memoryOf(user, skipped.id)).cues).toEqual([])
    expect((await cueJobs(user))[0]).toMatchObject({ status: "succeeded", result: { asked: 1, written: 0 } })
  })
})
