import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import {
  completion,
  eventually,
  type FakeUpstream,
  modelReply,
  type Reply,
  startFakeUpstream
} from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError, type MemoryJson, type ProfileJson, type TraitJson } from "./support/wire.ts"

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
    EXTRACTION_MODEL: "extractor-test",
    EXTRACTION_CONCURRENCY: "1",
    EXTRACTION_RETRY_BASE_MS: "50",
    EXTRACTION_MAX_ATTEMPTS: "3",
    SUMMARY_EVERY_CHANGES: "1000"
  })
})
afterAll(async () => {
  await gw.close()
  await chat.close()
  await model.close()
})
beforeEach(() => {
  chat.reset()
  model.reset()
})

/** Summary calls get a fixed answer; extraction calls take the next scripted reply (or an empty one). */
const isSummaryCall = (body: Record<string, unknown> | undefined) =>
  ((body?.["messages"] as Array<{ content: string }> | undefined)?.[0]?.content ?? "").includes(
    "summary an AI assistant reads"
  )
let extractionReplies: Array<Reply> = []
const script = (...replies: Array<Reply>) => extractionReplies.push(...replies)
const extractionCalls = () => model.requests.filter((request) => !isSummaryCall(request.body))
beforeEach(() => {
  extractionReplies = []
  model.handler = (request) =>
    isSummaryCall(request.body)
      ? modelReply({ summary: "A summary." })
      : (extractionReplies.shift() ?? modelReply({ traits: [], memories: [] }))
})

let counter = 0
const newUser = async () => {
  const id = `extract-${++counter}`
  await gw.request("POST", "/api/profiles", { json: { externalId: id } })
  return id
}

/** A chat turn through the gateway: it is recorded and queues an extraction job. */
const say = async (user: string, text: string, service?: Record<string, unknown>) => {
  chat.enqueue({ kind: "json", status: 200, body: completion({ content: "Noted." }) })
  const res = await gw.request("POST", "/v1/chat/completions", {
    json: {
      model: "gpt-test",
      messages: [{ role: "user", content: text }],
      ...(service === undefined ? {} : { service })
    },
    headers: { "x-service-id": user }
  })
  expect(res.status).toBe(200)
}

interface JobRow {
  id: string
  status: string
  attempts: number
  last_error: string | null
  result: Record<string, unknown> | null
  kind: string
}
const jobsOf = (user: string) =>
  gw.query<JobRow>(
    `SELECT j.id, j.status, j.attempts, j.last_error, j.result, j.kind FROM extraction_jobs j
     JOIN profiles p ON p.id = j.profile_id WHERE p.external_id = $1 ORDER BY j.created_at`,
    [user]
  )

/**
 * Waits until the user has `count` turn or ingest jobs and every job of theirs (summary rewrites
 * included) has finished; returns the turn and ingest jobs.
 */
const finishedJobs = (user: string, count = 1) =>
  eventually(async () => {
    const jobs = await jobsOf(user)
    const work = jobs.filter((j) => j.kind !== "summary")
    return work.length >= count && jobs.every((j) => j.status === "succeeded" || j.status === "failed")
      ? work
      : undefined
  }, 10_000)

const traitsOf = async (user: string) =>
  (await gw.request<{ traits: Array<TraitJson> }>("GET", `/api/profiles/${user}/traits`)).body.traits
const memoriesOf = async (user: string) =>
  (await gw.request<{ memories: Array<MemoryJson> }>("GET", `/api/profiles/${user}/memories`)).body.memories

describe("extraction from a turn", () => {
  it("writes traits and memories with provenance, from one JSON-mode call to the extraction model", async () => {
    const user = await newUser()
    script(
      modelReply({
        traits: [
          { key: "name", value: "Ana", confidence: 0.9 },
          { key: "expertise_level", value: "beginner", confidence: 0.8 }
        ],
        memories: [{ content: "The user is learning Rust for a robotics project", type: "fact", importance: 0.7 }],
        extra_key: "ignored"
      })
    )
    await say(user, "Hi, I'm Ana. I'm just starting with Rust for my robotics project.")
    const [job] = await finishedJobs(user)
    expect(job).toMatchObject({ status: "succeeded", attempts: 1, kind: "turn" })
    expect(job!.result).toMatchObject({ traits: { created: 2 }, memories: { created: 1, reinforced: 0 }, dropped: [] })

    const call = extractionCalls()[0]!
    expect(call.path).toBe("/v1/chat/completions")
    expect(call.headers["authorization"]).toBe("Bearer sk-test-extraction")
    expect(call.body).toMatchObject({
      model: "extractor-test",
      response_format: { type: "json_object" },
      temperature: 0
    })
    const [system, data] = call.body!["messages"] as Array<{ role: string; content: string }>
    // What the user said travels as JSON data, never inside the instructions.
    expect(system!.content).not.toContain("Ana")
    const input = JSON.parse(data!.content) as {
      conversation: Array<{ role: string; content: string; at: string }>
      trait_schema: Array<{ key: string }>
    }
    // Each line says when it was said: relative dates in it are read against that, not the job's time.
    const stored = await gw.query<{ created_at: Date }>(
      "SELECT m.created_at FROM messages m JOIN profiles p ON p.id = m.profile_id WHERE p.external_id = $1 ORDER BY m.created_at, m.id",
      [user]
    )
    expect(input.conversation).toEqual([
      {
        role: "user",
        content: "Hi, I'm Ana. I'm just starting with Rust for my robotics project.",
        at: stored[0]!.created_at.toISOString()
      },
      { role: "assistant", content: "Noted.", at: stored[1]!.created_at.toISOString() }
    ])
    expect(input.trait_schema.map((t) => t.key)).toContain("expertise_level")

    expect(await traitsOf(user)).toMatchObject([
      { key: "expertise_level", value: "beginner", source: "extracted", confidence: 0.8 },
      { key: "name", value: "Ana", source: "extracted", confidence: 0.9 }
    ])
    expect(await memoriesOf(user)).toMatchObject([
      { content: "The user is learning Rust for a robotics project", type: "fact", importance: 0.7 }
    ])
    const history = await gw.request<{
      history: Array<{ jobId: string; messageIds: Array<string>; source: string; newValue: unknown }>
    }>("GET", `/api/profiles/${user}/traits/name/history`)
    expect(history.body.history).toHaveLength(1)
    expect(history.body.history[0]).toMatchObject({ jobId: job!.id, source: "extracted", newValue: "Ana" })
    expect(history.body.history[0]!.messageIds).toHaveLength(2)
  })

  it("only sends the new turn, never the history", async () => {
    const user = await newUser()
    await say(user, "first")
    await finishedJobs(user, 1)
    chat.enqueue({ kind: "json", status: 200, body: completion({ content: "ok" }) })
    await gw.request("POST", "/v1/chat/completions", {
      json: {
        model: "m",
        messages: [
          { role: "user", content: "first" },
          { role: "assistant", content: "Noted." },
          { role: "user", content: "second" }
        ]
      },
      headers: { "x-service-id": user }
    })
    await finishedJobs(user, 2)
    const input = JSON.parse((extractionCalls()[1]!.body!["messages"] as Array<{ content: string }>)[1]!.content) as {
      conversation: Array<{ content: string }>
    }
    expect(input.conversation.map((m) => m.content)).toEqual(["second", "ok"])
  })

  it("never changes a trait set by hand", async () => {
    const user = await newUser()
    await gw.request("PUT", `/api/profiles/${user}/traits/name`, { json: { value: "Ana" } })
    script(modelReply({ traits: [{ key: "name", value: "Mallory", confidence: 0.99 }], memories: [] }))
    await say(user, "Call me Mallory")
    const [job] = await finishedJobs(user)
    expect(job!.result).toMatchObject({ traits: { kept_manual: 1, updated: 0 } })
    expect(await traitsOf(user)).toMatchObject([{ key: "name", value: "Ana", source: "manual", confidence: 1 }])
  })

  it("does not let a less confident value replace a more confident one", async () => {
    const user = await newUser()
    script(
      modelReply({ traits: [{ key: "expertise_level", value: "advanced", confidence: 0.9 }], memories: [] }),
      modelReply({ traits: [{ key: "expertise_level", value: "beginner", confidence: 0.5 }], memories: [] }),
      modelReply({ traits: [{ key: "expertise_level", value: "expert", confidence: 0.85 }], memories: [] })
    )
    await say(user, "one")
    await finishedJobs(user, 1)
    await say(user, "two")
    const jobs = await finishedJobs(user, 2)
    expect(jobs[1]!.result).toMatchObject({ traits: { kept_existing: 1 } })
    expect((await traitsOf(user))[0]).toMatchObject({ value: "advanced", confidence: 0.9 })
    await say(user, "three")
    await finishedJobs(user, 3)
    // 0.85 is within the 0.1 margin of 0.9.
    expect((await traitsOf(user))[0]).toMatchObject({ value: "expert", confidence: 0.85 })
    const history = await gw.request<{ history: Array<{ oldValue: unknown; newValue: unknown }> }>(
      "GET",
      `/api/profiles/${user}/traits/expertise_level/history`
    )
    expect(history.body.history.map((h) => [h.oldValue, h.newValue])).toEqual([
      ["advanced", "expert"],
      [null, "advanced"]
    ])
  })

  it("drops invalid items one by one and keeps the valid ones", async () => {
    const user = await newUser()
    script(
      modelReply({
        traits: [
          { key: "expertise_level", value: "wizard", confidence: 0.9 },
          { key: "interests", value: "chess", confidence: 0.9 },
          { key: "name", value: "Bo", confidence: 1.5 },
          { key: "favorite_color", value: "blue", confidence: 0.9 },
          { key: "timezone", value: "Europe/Oslo", confidence: 0.7 }
        ],
        memories: [
          { content: "Likes opera", type: "opinion", importance: 0.5 },
          { content: "Plays the cello", type: "fact", importance: 2 },
          { content: 42, type: "fact", importance: 0.5 },
          { content: "The user has two cats", type: "fact", importance: 0.6 }
        ]
      })
    )
    await say(user, "stuff")
    const [job] = await finishedJobs(user)
    expect(job!.status).toBe("succeeded")
    expect((job!.result!["dropped"] as Array<string>).length).toBe(7)
    expect(await traitsOf(user)).toMatchObject([{ key: "timezone", value: "Europe/Oslo" }])
    expect((await memoriesOf(user)).map((m) => m.content)).toEqual(["The user has two cats"])
  })

  it("survives a reply that is not JSON: the job succeeds and stores nothing", async () => {
    const user = await newUser()
    script(modelReply("Sorry, I cannot help with that."))
    await say(user, "hello")
    const [job] = await finishedJobs(user)
    expect(job).toMatchObject({ status: "succeeded", result: { dropped: ["the reply is not a JSON object"] } })
    expect(await traitsOf(user)).toEqual([])
    expect(await memoriesOf(user)).toEqual([])
  })

  it("reinforces a memory it already has instead of storing a duplicate", async () => {
    const user = await newUser()
    await gw.request("POST", `/api/profiles/${user}/memories`, {
      json: { content: "The user has a dog named Rex", type: "fact", importance: 0.5, cues: [] }
    })
    script(
      modelReply({
        traits: [],
        memories: [{ content: "the user has a dog named Rex.", type: "fact", importance: 0.4 }]
      }),
      modelReply({
        traits: [],
        memories: [{ content: "The user has a dog called Rex", type: "fact", importance: 0.5 }]
      })
    )
    await say(user, "My dog Rex")
    await finishedJobs(user, 1)
    await say(user, "Rex again")
    const jobs = await finishedJobs(user, 2)
    expect(jobs.map((j) => j.result!["memories"])).toEqual([
      { created: 0, reinforced: 1 },
      { created: 0, reinforced: 1 }
    ])
    const memories = await memoriesOf(user)
    expect(memories).toHaveLength(1)
    expect(memories[0]!.importance).toBeCloseTo(0.7, 5)
    const [row] = await gw.query<{ reinforcement_count: number; reinforced_at: Date | null; sources: number }>(
      "SELECT reinforcement_count, reinforced_at, cardinality(source_message_ids) AS sources FROM memories m JOIN profiles p ON p.id = m.profile_id WHERE p.external_id = $1",
      [user]
    )
    expect(row).toMatchObject({ reinforcement_count: 2, sources: 4 })
    expect(row!.reinforced_at).not.toBeNull()
  })

  it("shows a reinforced memory's importance without float noise, wherever a memory is answered", async () => {
    const user = await newUser()
    await gw.request("POST", `/api/profiles/${user}/memories`, {
      json: { content: "The user plays the violin", type: "fact", importance: 0.7, cues: [] }
    })
    // Reinforcing adds 0.1: 0.7 + 0.1 is 0.7999999999999999 in floating point.
    script(
      modelReply({ traits: [], memories: [{ content: "The user plays the violin", type: "fact", importance: 0.6 }] })
    )
    await say(user, "Violin practice today")
    expect((await finishedJobs(user))[0]!.result!["memories"]).toEqual({ created: 0, reinforced: 1 })

    expect((await memoriesOf(user)).map((m) => m.importance)).toEqual([0.8])
    const detail = await gw.request<{ recentMemories: Array<{ importance: number }> }>("GET", `/api/profiles/${user}`)
    expect(detail.body.recentMemories.map((m) => m.importance)).toEqual([0.8])
    const found = await gw.request<{ memories: Array<{ importance: number }> }>(
      "POST",
      `/api/profiles/${user}/memories/search`,
      { json: { query: "violin" } }
    )
    expect(found.body.memories.map((m) => m.importance)).toEqual([0.8])
    const exported = await gw.request<{ memories: Array<{ importance: number }> }>(
      "GET",
      `/api/profiles/${user}/export`
    )
    expect(exported.body.memories.map((m) => m.importance)).toEqual([0.8])
  })

  it("keeps learning a trait restored from an export as extracted", async () => {
    const user = await newUser()
    // As `pmg profiles import` restores a learned trait: its value, confidence and source.
    const restored = await gw.request<{ trait: TraitJson }>("PUT", `/api/profiles/${user}/traits/expertise_level`, {
      json: { value: "beginner", confidence: 0.6, source: "extracted" }
    })
    expect(restored.body.trait).toMatchObject({ value: "beginner", confidence: 0.6, source: "extracted" })
    script(modelReply({ traits: [{ key: "expertise_level", value: "advanced", confidence: 0.9 }], memories: [] }))
    await say(user, "I have been coding in Rust for ten years")
    const [job] = await finishedJobs(user)
    expect(job!.result).toMatchObject({ traits: { updated: 1 } })
    expect(await traitsOf(user)).toMatchObject([
      { key: "expertise_level", value: "advanced", source: "extracted", confidence: 0.9 }
    ])
  })

  it("honours a per-request trait with extraction switched off", async () => {
    const user = await newUser()
    script(
      modelReply({
        traits: [
          { key: "name", value: "Zed", confidence: 0.9 },
          { key: "timezone", value: "UTC", confidence: 0.9 }
        ],
        memories: []
      })
    )
    await say(user, "I'm Zed, on UTC", {
      traits: [{ key: "name", valueType: "string", extraction: { enabled: false } }]
    })
    await finishedJobs(user)
    const input = JSON.parse((extractionCalls()[0]!.body!["messages"] as Array<{ content: string }>)[1]!.content) as {
      trait_schema: Array<{ key: string }>
    }
    expect(input.trait_schema.map((t) => t.key)).not.toContain("name")
    expect((await traitsOf(user)).map((t) => t.key)).toEqual(["timezone"])
  })

  it("leaves turns recorded with skipExtraction alone", async () => {
    const user = await newUser()
    await say(user, "secret", { skipExtraction: true })
    // The turn (with its job, had there been one) is committed before the answer ends.
    const stored = await gw.query(
      "SELECT m.role FROM messages m JOIN profiles p ON p.id = m.profile_id WHERE p.external_id = $1",
      [user]
    )
    expect(stored).toHaveLength(2)
    expect(await jobsOf(user)).toEqual([])
    expect(extractionCalls()).toHaveLength(0)
  })
})

describe("failures and retries", () => {
  it("retries a job that fails twice, then succeeds", async () => {
    const user = await newUser()
    script(
      { kind: "json", status: 500, body: { error: { message: "model overloaded" } } },
      { kind: "json", status: 503, body: { error: { message: "try later" } } },
      modelReply({ traits: [{ key: "name", value: "Kai", confidence: 0.9 }], memories: [] })
    )
    await say(user, "I'm Kai")
    const [job] = await finishedJobs(user)
    expect(job).toMatchObject({ status: "succeeded", attempts: 3, last_error: null })
    expect(extractionCalls()).toHaveLength(3)
    expect((await traitsOf(user))[0]).toMatchObject({ key: "name", value: "Kai" })
  })

  it("marks a job failed after the last attempt, keeps the error and shows it to operators", async () => {
    const user = await newUser()
    script(
      ...Array.from(
        { length: 3 },
        (): Reply => ({ kind: "json", status: 500, body: { error: { message: "model is down" } } })
      )
    )
    await say(user, "hello")
    const [job] = await finishedJobs(user)
    expect(job).toMatchObject({ status: "failed", attempts: 3 })
    expect(job!.last_error).toContain("500")
    expect(job!.last_error).toContain("model is down")

    const overview = await gw.request<{
      counts: { failed: number }
      jobs: Array<{ id: string; status: string; lastError: string }>
      worker: { running: boolean; failed: number; retried: number }
    }>("GET", "/api/jobs")
    expect(overview.status).toBe(200)
    expect(overview.body.counts.failed).toBeGreaterThanOrEqual(1)
    expect(overview.body.jobs[0]).toMatchObject({ id: job!.id, status: "failed" })
    expect(overview.body.worker).toMatchObject({ running: true })
    expect(overview.body.worker.failed).toBeGreaterThanOrEqual(1)
    const single = await gw.request<{ job: { id: string; status: string; attempts: number } }>(
      "GET",
      `/api/jobs/${job!.id}`
    )
    expect(single.body.job).toMatchObject({ id: job!.id, status: "failed", attempts: 3 })
    expectError(await gw.request("GET", "/api/jobs/00000000-0000-0000-0000-000000000000"), 404, "job_not_found")
    expectError(await gw.request("GET", "/api/jobs/nope"), 404, "job_not_found")
    expectError(await gw.request("GET", "/api/jobs?status=stuck"), 400, "invalid_status")
  })

  it("retries a failed job when an operator asks: back in the queue with its attempts anew, taken at once", async () => {
    const user = await newUser()
    script(
      ...Array.from(
        { length: 3 },
        (): Reply => ({ kind: "json", status: 500, body: { error: { message: "model is down" } } })
      )
    )
    await say(user, "I'm Noor")
    const [failed] = await finishedJobs(user)
    expect(failed).toMatchObject({ status: "failed", attempts: 3 })

    script(modelReply({ traits: [{ key: "name", value: "Noor", confidence: 0.9 }], memories: [] }))
    const retried = await gw.request<{
      job: { id: string; status: string; attempts: number; finishedAt: string | null }
    }>("POST", `/api/jobs/${failed!.id}/retry`)
    expect(retried.status).toBe(200)
    expect(retried.body.job).toMatchObject({ id: failed!.id, status: "pending", attempts: 0, finishedAt: null })
    const [done] = await finishedJobs(user)
    expect(done).toMatchObject({ id: failed!.id, status: "succeeded", attempts: 1 })
    expect((await traitsOf(user))[0]).toMatchObject({ key: "name", value: "Noor" })

    // Only a failed job can be retried; an unknown one is not found.
    expectError(await gw.request("POST", `/api/jobs/${failed!.id}/retry`), 409, "job_not_failed")
    expectError(await gw.request("POST", "/api/jobs/00000000-0000-0000-0000-000000000000/retry"), 404, "job_not_found")
    expectError(await gw.request("POST", "/api/jobs/nope/retry"), 404, "job_not_found")
  })
})

describe("the wait before a retry", () => {
  const BASE_MS = 60_000
  let patient: TestGateway
  beforeAll(async () => {
    patient = await startGateway({
      EXTRACTION_BASE_URL: model.url,
      EXTRACTION_API_KEY: "sk-test-extraction",
      EXTRACTION_CONCURRENCY: "1",
      EXTRACTION_RETRY_BASE_MS: String(BASE_MS),
      // The step that ends the wait moves a timestamp by hand, which notifies nobody: poll often.
      EXTRACTION_POLL_MS: "100",
      SUMMARY_EVERY_CHANGES: "1000"
    })
  })
  afterAll(() => patient.close())

  it("is kept by the queue from the failure on (EXTRACTION_RETRY_BASE_MS, ±20 %), and the job runs once it is over", async () => {
    await patient.request("POST", "/api/profiles", { json: { externalId: "patient" } })
    script(
      { kind: "json", status: 500, body: { error: { message: "model overloaded" } } },
      modelReply({ traits: [{ key: "name", value: "Pat", confidence: 0.9 }], memories: [] })
    )
    expect((await patient.request("POST", "/api/profiles/patient/ingest", { json: { data: "I'm Pat" } })).status).toBe(
      202
    )
    // The wait lives in the database, on its clock (the one all replicas share): run_after and
    // updated_at are written by the same statement.
    const waiting = await eventually(async () => {
      const [job] = await patient.query<{
        status: string
        attempts: number
        last_error: string | null
        wait_ms: number
      }>(
        "SELECT status, attempts, last_error, (extract(epoch FROM run_after - updated_at) * 1000)::float8 AS wait_ms FROM extraction_jobs"
      )
      return job?.last_error !== null && job?.status === "pending" ? job : undefined
    })
    expect(waiting).toMatchObject({ attempts: 1, last_error: expect.stringContaining("model overloaded") })
    expect(waiting.wait_ms).toBeGreaterThanOrEqual(BASE_MS * 0.8)
    expect(waiting.wait_ms).toBeLessThanOrEqual(BASE_MS * 1.2)

    // A minute later (moved by hand), the job runs again and succeeds.
    await patient.query("UPDATE extraction_jobs SET run_after = now()")
    const done = await eventually(async () => {
      const [job] = await patient.query<{ status: string; attempts: number; last_error: string | null }>(
        "SELECT status, attempts, last_error FROM extraction_jobs"
      )
      return job?.status === "succeeded" ? job : undefined
    })
    expect(done).toEqual({ status: "succeeded", attempts: 2, last_error: null })
    const traits = await patient.request<{ traits: Array<TraitJson> }>("GET", "/api/profiles/patient/traits")
    expect(traits.body.traits).toMatchObject([{ key: "name", value: "Pat" }])
  })
})

describe("summaries", () => {
  let eager: TestGateway
  beforeAll(async () => {
    eager = await startGateway(
      {
        UPSTREAM_BASE_URL: chat.url,
        UPSTREAM_API_KEY: "sk-test-upstream",
        EXTRACTION_BASE_URL: model.url,
        EXTRACTION_API_KEY: "sk-test-extraction",
        EXTRACTION_CONCURRENCY: "2",
        SUMMARY_EVERY_CHANGES: "1"
      },
      { databaseUrl: gw.databaseUrl }
    )
  })
  afterAll(() => eager.close())

  it("rewrites the summary in the background once enough has changed, keeping every version", async () => {
    const user = await newUser()
    let summaries = 0
    model.handler = (request) =>
      isSummaryCall(request.body)
        ? modelReply({ summary: `Summary number ${++summaries}.` })
        : modelReply({
            traits: [],
            memories: [{ content: `Fact ${request.rawBody.length}`, type: "fact", importance: 0.5 }]
          })
    chat.handler = () => ({ kind: "json", status: 200, body: completion({ content: "ok" }) })
    await eager.request("POST", "/v1/chat/completions", {
      json: { model: "m", messages: [{ role: "user", content: "I like tea" }] },
      headers: { "x-service-id": user }
    })
    await finishedJobs(user, 1)
    expect((await jobsOf(user)).map((j) => [j.kind, j.status])).toEqual([
      ["turn", "succeeded"],
      ["summary", "succeeded"]
    ])
    const profile = await gw.request<{ profile: ProfileJson }>("GET", `/api/profiles/${user}`)
    expect(profile.body.profile).toMatchObject({ summary: "Summary number 1.", summaryVersion: 1 })
    const history = await gw.request<{ history: Array<{ version: number; source: string; summary: string }> }>(
      "GET",
      `/api/profiles/${user}/summary/history`
    )
    expect(history.body.history).toEqual([
      { version: 1, summary: "Summary number 1.", source: "extracted", createdAt: expect.any(String) }
    ])
  })

  it("loses no version when jobs and manual edits race", async () => {
    const user = await newUser()
    let summaries = 0
    model.handler = (request) =>
      isSummaryCall(request.body)
        ? modelReply({ summary: `Auto ${++summaries}` }, 20)
        : modelReply(
            { traits: [], memories: [{ content: `Memory ${Math.random()}`, type: "fact", importance: 0.5 }] },
            20
          )
    chat.handler = () => ({ kind: "json", status: 200, body: completion({ content: "ok" }) })
    for (let i = 0; i < 4; i++) {
      await eager.request("POST", "/v1/chat/completions", {
        json: { model: "m", messages: [{ role: "user", content: `turn ${i}` }] },
        headers: { "x-service-id": user }
      })
      await gw.request("PATCH", `/api/profiles/${user}`, { json: { summary: `Manual ${i}` } })
    }
    const jobs = await finishedJobs(user, 4)
    expect((await jobsOf(user)).every((j) => j.status === "succeeded")).toBe(true)
    expect(jobs).toHaveLength(4)
    const profile = (await gw.request<{ profile: ProfileJson }>("GET", `/api/profiles/${user}`)).body.profile
    const history = (
      await gw.request<{ history: Array<{ version: number }> }>("GET", `/api/profiles/${user}/summary/history`)
    ).body.history
    expect(history.map((h) => h.version)).toEqual(Array.from({ length: history.length }, (_, i) => history.length - i))
    expect(profile.summaryVersion).toBe(history.length)
    expect(history.length).toBeGreaterThanOrEqual(4)
  })
})

describe("ingest", () => {
  it("queues extraction of any text (202) and can wait for the result", async () => {
    const user = await newUser()
    script(modelReply({ traits: [{ key: "segment", value: "enterprise", confidence: 0.8 }], memories: [] }))
    const queued = await gw.request<{ job: { id: string; status: string; kind: string; createdAt: string } }>(
      "POST",
      `/api/profiles/${user}/ingest`,
      {
        json: { data: "CRM note: works at a 5000-person bank.", source: "crm" }
      }
    )
    expect(queued.status).toBe(202)
    expect(queued.body.job).toMatchObject({ status: "pending", kind: "ingest" })
    await finishedJobs(user)
    const input = JSON.parse((extractionCalls()[0]!.body!["messages"] as Array<{ content: string }>)[1]!.content) as {
      document: { text: string; source: string; received_at: string }
    }
    expect(input.document).toEqual({
      text: "CRM note: works at a 5000-person bank.",
      source: "crm",
      received_at: expect.any(String)
    })
    expect(Date.parse(input.document.received_at)).toBe(Date.parse(queued.body.job.createdAt))

    script(
      modelReply({
        traits: [],
        memories: [{ content: "The user manages a team of 12", type: "context", importance: 0.6 }]
      })
    )
    const waited = await gw.request<{ job: { status: string; result: { memories: { created: number } } } }>(
      "POST",
      `/api/profiles/${user}/ingest?wait=true`,
      { json: { data: "Manages a team of 12." } }
    )
    expect(waited.status).toBe(200)
    expect(waited.body.job).toMatchObject({ status: "succeeded", result: { memories: { created: 1 } } })
  })

  it("refuses oversized data with 413, an unknown profile with 404, and empty data with 400", async () => {
    const user = await newUser()
    expectError(
      await gw.request("POST", `/api/profiles/${user}/ingest`, { json: { data: "x".repeat(100_001) } }),
      413,
      "request_too_large"
    )
    expectError(
      await gw.request("POST", "/api/profiles/ghost/ingest", { json: { data: "x" } }),
      404,
      "profile_not_found"
    )
    expectError(await gw.request("POST", `/api/profiles/${user}/ingest`, { json: { data: "" } }), 400, "invalid_data")
    expect(await jobsOf(user)).toEqual([])
  })
})

describe("trait history", () => {
  it("records manual changes and deletions too", async () => {
    const user = await newUser()
    await gw.request("PUT", `/api/profiles/${user}/traits/name`, { json: { value: "A" } })
    await gw.request("PUT", `/api/profiles/${user}/traits/name`, { json: { value: "B", confidence: 0.7 } })
    await gw.request("DELETE", `/api/profiles/${user}/traits/name`)
    const res = await gw.request<{
      history: Array<{
        oldValue: unknown
        newValue: unknown
        source: string
        confidence: number | null
        jobId: string | null
      }>
    }>("GET", `/api/profiles/${user}/traits/name/history`)
    expect(res.body.history.map((h) => [h.oldValue, h.newValue, h.source, h.confidence, h.jobId])).toEqual([
      ["B", null, "manual", null, null],
      ["A", "B", "manual", 0.7, null],
      [null, "A", "manual", 1, null]
    ])
    expectError(await gw.request("GET", "/api/profiles/ghost/traits/name/history"), 404, "profile_not_found")
  })
})
