import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, type FakeUpstream, modelReply, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const BUDGET = 2

let model: FakeUpstream
beforeAll(async () => {
  model = await startFakeUpstream()
  model.handler = () => modelReply({ traits: [], memories: [] })
})
afterAll(() => model.close())

const workerEnv = {
  EXTRACTION_API_KEY: "sk-test-extraction",
  EXTRACTION_CONCURRENCY: "1",
  EXTRACTION_JOBS_PER_PROFILE_PER_HOUR: String(BUDGET),
  // The step that frees the budget moves timestamps by hand, which notifies nobody: poll often.
  EXTRACTION_POLL_MS: "200",
  SUMMARY_EVERY_CHANGES: "100000",
  SUMMARY_MAX_AGE_HOURS: "100000"
}

/** The documents the extraction model was asked about, for one profile (`profile/seq`). */
const documentsSent = (profile: string) =>
  model.requests.flatMap((request) => {
    const messages = request.body?.["messages"] as Array<{ content: string }> | undefined
    try {
      const text = (JSON.parse(messages?.[1]?.content ?? "{}") as { document?: { text: string } }).document?.text
      return text?.startsWith(`${profile}/`) ? [text] : []
    } catch {
      return []
    }
  })

interface JobRow {
  id: string
  status: string
  last_error: string | null
  run_after: Date
  updated_at: Date
}
const jobsOf = (gw: TestGateway, profile: string) =>
  gw.query<JobRow>(
    `SELECT j.id, j.status, j.last_error, j.run_after, j.updated_at FROM extraction_jobs j
     JOIN profiles p ON p.id = j.profile_id WHERE p.external_id = $1 ORDER BY j.created_at`,
    [profile]
  )

const ingest = async (gw: TestGateway, profile: string, count: number) => {
  for (let seq = 0; seq < count; seq++) {
    const res = await gw.request("POST", `/api/profiles/${profile}/ingest`, { json: { data: `${profile}/${seq}` } })
    expect(res.status).toBe(202)
  }
}

/** Waits for the event: the profile's next job was put back because its budget is spent. */
const deferredJob = (gw: TestGateway, profile: string) =>
  eventually(async () => (await jobsOf(gw, profile)).find((job) => job.last_error?.startsWith("deferred:")), 10_000)

describe("the per-profile extraction budget (EXTRACTION_JOBS_PER_PROFILE_PER_HOUR)", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ ...workerEnv, EXTRACTION_BASE_URL: model.url })
  })
  afterAll(() => gw.close())

  it("defers a profile's jobs past its budget, shows them to operators, and runs them once the budget frees up", async () => {
    for (const profile of ["chatty", "quiet"])
      await gw.request("POST", "/api/profiles", { json: { externalId: profile } })
    await ingest(gw, "chatty", BUDGET + 1)

    const deferred = await deferredJob(gw, "chatty")
    const jobs = await jobsOf(gw, "chatty")
    expect(jobs.map((job) => job.status)).toEqual(["succeeded", "succeeded", "pending"])
    expect(documentsSent("chatty")).toEqual(["chatty/0", "chatty/1"])
    // It waits for the hour of the oldest job that counts, not for a poll.
    expect(deferred.run_after.getTime()).toBe(jobs[0]!.updated_at.getTime() + 3_600_000)

    const pending = await gw.request<{
      jobs: Array<{ id: string; runAfter: string; lastError: string | null; status: string }>
    }>("GET", "/api/jobs?status=pending")
    const shown = pending.body.jobs.find((job) => job.id === deferred.id)
    expect(shown).toMatchObject({
      status: "pending",
      externalId: "chatty",
      waitReason: "deferred",
      lastError: expect.stringContaining("EXTRACTION_JOBS_PER_PROFILE_PER_HOUR")
    })
    expect(Date.parse(shown!.runAfter)).toBe(deferred.run_after.getTime())

    // Another profile is not held up.
    await ingest(gw, "quiet", 1)
    await eventually(async () => ((await jobsOf(gw, "quiet"))[0]?.status === "succeeded" ? true : undefined), 10_000)

    // An hour later (moved by hand), the deferred job runs.
    await gw.query(
      `UPDATE extraction_jobs SET updated_at = updated_at - interval '1 hour', finished_at = finished_at - interval '1 hour'
       WHERE id <> $1 AND profile_id = (SELECT id FROM profiles WHERE external_id = 'chatty')`,
      [deferred.id]
    )
    // The model holds its answer about the deferred document, so the job is seen while it runs.
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    model.handler = (request) =>
      JSON.stringify(request.body).includes("chatty/2")
        ? { kind: "later", reply: held.then(() => modelReply({ traits: [], memories: [] })) }
        : modelReply({ traits: [], memories: [] })
    await gw.query(`UPDATE extraction_jobs SET run_after = now() WHERE id = $1`, [deferred.id])
    // Taken by a worker, it no longer says it waits for the budget.
    const running = await eventually(
      async () => (await jobsOf(gw, "chatty")).find((job) => job.id === deferred.id && job.status === "running"),
      10_000
    )
    expect(running.last_error).toBeNull()
    release()
    const done = await eventually(
      async () => (await jobsOf(gw, "chatty")).find((job) => job.id === deferred.id && job.status === "succeeded"),
      10_000
    )
    expect(done.last_error).toBeNull()
    expect(documentsSent("chatty")).toEqual(["chatty/0", "chatty/1", "chatty/2"])
  })
})

describe("the budget across replicas", () => {
  let first: TestGateway
  let second: TestGateway
  beforeAll(async () => {
    first = await startGateway({ ...workerEnv, EXTRACTION_BASE_URL: model.url })
    second = await startGateway({ ...workerEnv, EXTRACTION_BASE_URL: model.url }, { databaseUrl: first.databaseUrl })
  })
  afterAll(async () => {
    await second.close()
    await first.close()
  })

  it("is counted in the shared queue, so two workers together stay within it", async () => {
    await first.request("POST", "/api/profiles", { json: { externalId: "shared" } })
    for (let seq = 0; seq < BUDGET + 2; seq++) {
      const gw = seq % 2 === 0 ? first : second
      expect(
        (await gw.request("POST", "/api/profiles/shared/ingest", { json: { data: `shared/${seq}` } })).status
      ).toBe(202)
    }
    await deferredJob(first, "shared")
    expect((await jobsOf(first, "shared")).map((job) => job.status)).toEqual([
      "succeeded",
      "succeeded",
      "pending",
      "pending"
    ])
    expect(documentsSent("shared")).toEqual(["shared/0", "shared/1"])
  })
})
