import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, type FakeUpstream, modelReply, type Reply, startFakeUpstream } from "./support/fakeUpstream.ts"
import { createDatabase, startGateway, type TestGateway } from "./support/gateway.ts"
import { freePort, spawnService, waitUntilHealthy } from "./support/serviceProcess.ts"

let model: FakeUpstream
beforeAll(async () => {
  model = await startFakeUpstream()
})
afterAll(() => model.close())

const workerEnv = (overrides: Record<string, string> = {}) => ({
  EXTRACTION_BASE_URL: model.url,
  EXTRACTION_API_KEY: "sk-test-extraction",
  EXTRACTION_CONCURRENCY: "2",
  // Notifications, not polling, must wake the workers.
  EXTRACTION_POLL_MS: "60000",
  SUMMARY_EVERY_CHANGES: "100000",
  SUMMARY_MAX_AGE_HOURS: "100000",
  ...overrides
})

/** The document text of an ingest extraction call (`profile/seq`), or undefined for other calls. */
const documentOf = (body: Record<string, unknown> | undefined): string | undefined => {
  const messages = body?.["messages"] as Array<{ content: string }> | undefined
  try {
    return (JSON.parse(messages?.[1]?.content ?? "{}") as { document?: { text: string } }).document?.text
  } catch {
    return undefined
  }
}

interface JobRow {
  kind: string
  status: string
  attempts: number
}
const allJobs = (gw: TestGateway) =>
  gw.query<JobRow>("SELECT kind, status, attempts FROM extraction_jobs ORDER BY created_at")
const ingest = (gw: TestGateway, profile: string, data: string) =>
  gw.request("POST", `/api/profiles/${profile}/ingest`, { json: { data } })

describe("the queue shared by several workers", () => {
  it("never runs two jobs of one profile at once, and runs them in order", async () => {
    const profiles = ["p-a", "p-b", "p-c"]
    const total = profiles.length * 5
    const arrived: Array<string> = []
    const answered = new Map(profiles.map((profile) => [profile, 0]))
    const inFlight = new Set<string>()
    const violations: Array<string> = []
    let overlapped = false
    /** Model calls held open, oldest first: the test decides when each is answered. */
    const held: Array<{ readonly doc: string; readonly answer: (reply: Reply) => void }> = []
    const profileOf = (doc: string) => doc.split("/")[0]!
    // Answer the oldest call once another profile's call is in flight too (so the workers are seen
    // running profiles side by side), or when no other call can arrive: every other profile is done.
    const pump = () => {
      while (held.length > 0) {
        const oldest = held[0]!
        const others = profiles.filter((profile) => profile !== profileOf(oldest.doc))
        const noneCanCome = others.every((profile) => answered.get(profile) === 5 && !inFlight.has(profile))
        if (held.length < 2 && !noneCanCome) return
        if (held.length >= 2) overlapped = true
        held.shift()
        inFlight.delete(profileOf(oldest.doc))
        answered.set(profileOf(oldest.doc), answered.get(profileOf(oldest.doc))! + 1)
        oldest.answer(modelReply({ traits: [], memories: [] }))
      }
    }
    model.reset()
    model.handler = (request) => {
      const doc = documentOf(request.body)
      if (doc === undefined) return modelReply({ traits: [], memories: [] })
      const profile = profileOf(doc)
      if (inFlight.has(profile)) violations.push(`${doc} arrived while ${profile} had a call in flight`)
      inFlight.add(profile)
      arrived.push(doc)
      const reply = new Promise<Reply>((resolve) => held.push({ doc, answer: resolve }))
      queueMicrotask(pump)
      return { kind: "later", reply }
    }
    const first = await startGateway(workerEnv())
    const second = await startGateway(workerEnv(), { databaseUrl: first.databaseUrl })
    try {
      for (const profile of profiles) await first.request("POST", "/api/profiles", { json: { externalId: profile } })
      for (let seq = 0; seq < 5; seq++) {
        for (const profile of profiles) await ingest(seq % 2 === 0 ? first : second, profile, `${profile}/${seq}`)
      }
      await eventually(async () => {
        const jobs = await allJobs(first)
        return jobs.length === total && jobs.every((j) => j.status === "succeeded") ? true : undefined
      }, 20_000)

      expect(violations).toEqual([])
      for (const profile of profiles) {
        expect(arrived.filter((doc) => profileOf(doc) === profile)).toEqual(
          [0, 1, 2, 3, 4].map((seq) => `${profile}/${seq}`)
        )
      }
      // Several profiles did run in parallel: the workers were not simply taking turns.
      expect(overlapped).toBe(true)
    } finally {
      await second.close()
      await first.close()
    }
  })

  it("reclaims a job whose worker died once its lease runs out", async () => {
    model.reset()
    model.handler = () => modelReply({ traits: [], memories: [] })
    const gw = await startGateway(workerEnv({ EXTRACTION_LEASE_MS: "300", EXTRACTION_CONCURRENCY: "0" }))
    try {
      await gw.request("POST", "/api/profiles", { json: { externalId: "orphaned" } })
      await ingest(gw, "orphaned", "left behind")
      // A worker that vanished mid-job: claimed, lease already over.
      await gw.query(
        "UPDATE extraction_jobs SET status = 'running', attempts = 1, locked_by = 'dead-worker', locked_until = now() - interval '1 second'"
      )
      const worker = await startGateway(workerEnv({ EXTRACTION_LEASE_MS: "300" }), { databaseUrl: gw.databaseUrl })
      try {
        await eventually(async () => ((await allJobs(gw))[0]?.status === "succeeded" ? true : undefined))
        expect((await allJobs(gw))[0]).toMatchObject({ attempts: 2 })
      } finally {
        await worker.close()
      }
    } finally {
      await gw.close()
    }
  })
})

describe("a worker that lost its lease", () => {
  const leaseLostOf = async (gw: TestGateway) =>
    (await gw.request<{ worker: { leaseLost: number } }>("GET", "/api/jobs")).body.worker.leaseLost
  /** Another worker takes the job over, as one would after the lease ran out during a freeze. */
  const takeOver = (gw: TestGateway) =>
    gw.query(
      "UPDATE extraction_jobs SET locked_by = 'other-worker', locked_until = now() + interval '1 hour' WHERE status = 'running'"
    )
  const memoryCount = async (gw: TestGateway) =>
    (await gw.query<{ count: number }>("SELECT count(*)::int AS count FROM memories"))[0]!.count

  it("commits nothing when its lease was taken over during the model call", async () => {
    model.reset()
    let answer: (reply: Reply) => void = () => {}
    model.handler = () => ({ kind: "later", reply: new Promise<Reply>((resolve) => (answer = resolve)) })
    // A lease long enough that no renewal happens during the test: only the commit can notice.
    const gw = await startGateway(workerEnv({ EXTRACTION_CONCURRENCY: "1", EXTRACTION_LEASE_MS: "600000" }))
    try {
      await gw.request("POST", "/api/profiles", { json: { externalId: "fenced" } })
      await ingest(gw, "fenced", "I moved to Lisbon")
      await eventually(async () => (model.requests.length > 0 ? true : undefined))
      await takeOver(gw)
      answer(
        modelReply({ traits: [], memories: [{ content: "The user lives in Lisbon.", type: "fact", importance: 0.5 }] })
      )
      await eventually(async () => ((await leaseLostOf(gw)) === 1 ? true : undefined))
      expect(await memoryCount(gw)).toBe(0)
      expect((await allJobs(gw))[0]).toMatchObject({ status: "running", attempts: 1 })
    } finally {
      await gw.close()
    }
  })

  it("stops its model call as soon as a renewal finds the job taken over", async () => {
    model.reset()
    model.handler = () => ({ kind: "hang" })
    const gw = await startGateway(workerEnv({ EXTRACTION_CONCURRENCY: "1", EXTRACTION_LEASE_MS: "300" }))
    try {
      await gw.request("POST", "/api/profiles", { json: { externalId: "overtaken" } })
      await ingest(gw, "overtaken", "slow document")
      await eventually(async () => (model.requests.length > 0 ? true : undefined))
      await takeOver(gw)
      await eventually(async () => ((await leaseLostOf(gw)) === 1 ? true : undefined))
      await eventually(async () => (model.requests[0]!.aborted ? true : undefined))
      expect((await allJobs(gw))[0]).toMatchObject({ status: "running" })
    } finally {
      await gw.close()
    }
  })
})

describe("a worker stalled longer than its lease (SIGSTOP)", () => {
  it("is taken over, and its own attempt commits nothing when it wakes up: the job's effects apply once", async () => {
    model.reset()
    let releaseFirst: (reply: Reply) => void = () => {}
    const extracted = modelReply({
      traits: [],
      memories: [{ content: "The user moved to Lisbon.", type: "fact", importance: 0.5 }]
    })
    // The first call (the stalled worker's) is answered only when the test says; later ones at once.
    model.handler = () =>
      model.requests.length === 1
        ? { kind: "later", reply: new Promise<Reply>((resolve) => (releaseFirst = resolve)) }
        : extracted
    const databaseUrl = await createDatabase()
    const stalled = spawnService({
      PORT: String(await freePort()),
      DATABASE_URL: databaseUrl,
      ...workerEnv({ EXTRACTION_CONCURRENCY: "1", EXTRACTION_LEASE_MS: "1000" })
    })
    let rescuer: TestGateway | undefined
    try {
      await waitUntilHealthy(stalled)
      const post = (path: string, body: unknown) =>
        fetch(`${stalled.baseUrl}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body)
        })
      await post("/api/profiles", { externalId: "stalled" })
      await post("/api/profiles/stalled/ingest", { data: "I moved to Lisbon" })
      await eventually(async () => (model.requests.length === 1 ? true : undefined))
      stalled.child.kill("SIGSTOP")

      rescuer = await startGateway(workerEnv({ EXTRACTION_CONCURRENCY: "1", EXTRACTION_LEASE_MS: "1000" }), {
        databaseUrl
      })
      const done = await eventually(async () => {
        const [job] = await allJobs(rescuer!)
        return job?.status === "succeeded" ? job : undefined
      }, 20_000)
      expect(done.attempts).toBe(2)

      // The stalled worker wakes up to the model's answer for its own attempt.
      releaseFirst(extracted)
      stalled.child.kill("SIGCONT")
      const leaseLost = await eventually(async () => {
        const response = await fetch(`${stalled.baseUrl}/api/jobs`)
        const { worker } = (await response.json()) as { worker: { leaseLost: number } }
        return worker.leaseLost > 0 ? worker.leaseLost : undefined
      }, 20_000)
      expect(leaseLost).toBe(1)
      const memories = await rescuer.query<{ content: string; importance: number }>(
        "SELECT content, importance FROM memories"
      )
      expect(memories).toEqual([{ content: "The user moved to Lisbon.", importance: 0.5 }])
    } finally {
      stalled.child.kill("SIGCONT")
      stalled.child.kill("SIGKILL")
      await stalled.exited
      await rescuer?.close()
    }
  }, 60_000)
})

describe("shutdown", () => {
  it("lets a running job finish within the grace period", async () => {
    model.reset()
    model.handler = () => modelReply({ traits: [], memories: [] }, 400)
    const gw = await startGateway(workerEnv())
    const databaseUrl = gw.databaseUrl
    const observer = await startGateway({}, { databaseUrl })
    try {
      await gw.request("POST", "/api/profiles", { json: { externalId: "graceful" } })
      await ingest(gw, "graceful", "slow document")
      await eventually(async () => (model.requests.length > 0 ? true : undefined))
      await gw.close()
      expect((await allJobs(observer))[0]).toMatchObject({ status: "succeeded", attempts: 1 })
    } finally {
      await observer.close()
    }
  })

  it("puts a job that outlasts the grace period back in the queue, unharmed", async () => {
    model.reset()
    // A model that never answers: only the end of the grace period can end the job.
    model.handler = () => ({ kind: "hang" })
    const gw = await startGateway(workerEnv({ EXTRACTION_SHUTDOWN_GRACE_MS: "200" }))
    const observer = await startGateway({}, { databaseUrl: gw.databaseUrl })
    try {
      await gw.request("POST", "/api/profiles", { json: { externalId: "cut-short" } })
      await ingest(gw, "cut-short", "very slow document")
      await eventually(async () => (model.requests.length > 0 ? true : undefined))
      await gw.close()
      expect((await allJobs(observer))[0]).toMatchObject({ status: "pending", attempts: 0 })
      // The model call was abandoned, not left running.
      await eventually(async () => (model.requests[0]!.aborted ? true : undefined))
    } finally {
      await observer.close()
    }
  })
})

describe("a hard kill", () => {
  it("loses no committed turn: every queued job is extracted after a restart", async () => {
    model.reset()
    model.handler = () =>
      modelReply({ traits: [], memories: [{ content: `Memory ${Math.random()}`, type: "fact", importance: 0.5 }] }, 300)
    const databaseUrl = await createDatabase()
    const env = {
      PORT: String(await freePort()),
      DATABASE_URL: databaseUrl,
      ...workerEnv({ EXTRACTION_CONCURRENCY: "1", EXTRACTION_LEASE_MS: "1000" })
    }
    const first = spawnService(env)
    await waitUntilHealthy(first)
    const post = (path: string, body: unknown) =>
      fetch(`${first.baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body)
      })
    await post("/api/profiles", { externalId: "crash-a" })
    await post("/api/profiles", { externalId: "crash-b" })
    for (let i = 0; i < 3; i++) {
      await post("/api/profiles/crash-a/ingest", { data: `a${i}` })
      await post("/api/profiles/crash-b/ingest", { data: `b${i}` })
    }
    await eventually(async () => (model.requests.length > 0 ? true : undefined))
    first.child.kill("SIGKILL")
    await first.exited

    const observer = await startGateway({}, { databaseUrl })
    const second = spawnService(env)
    try {
      const before = await allJobs(observer)
      expect(before.filter((j) => j.status !== "succeeded").length).toBeGreaterThan(0)
      await waitUntilHealthy(second)
      await eventually(async () => {
        const jobs = await allJobs(observer)
        const ingested = jobs.filter((j) => j.kind === "ingest")
        return ingested.length === 6 && jobs.every((j) => j.status === "succeeded") ? true : undefined
      }, 20_000)
      const memories = await observer.query<{ count: number }>("SELECT count(*)::int AS count FROM memories")
      expect(memories[0]!.count).toBeGreaterThanOrEqual(6)
    } finally {
      second.child.kill("SIGTERM")
      await second.exited
      await observer.close()
    }
  })
})
