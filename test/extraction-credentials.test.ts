import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import {
  completion,
  eventually,
  type FakeUpstream,
  modelReply,
  type RecordedRequest,
  type Reply,
  startFakeUpstream
} from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

const APP = "sk-app-extraction-credentials"
const ADMIN = "sk-admin-extraction-credentials"
// Not key-like: the job's error must hide them because they are keys, not because of their shape.
const OPERATOR = "operator-provider-key-0b1c"
const BOUND = "tenant-provider-key-9e8d"
const ROTATED = "tenant-rotated-provider-key-77aa"
const EXTRACTION_MODEL = "extractor-test"

const isExtraction = (request: RecordedRequest) => request.body?.["model"] === EXTRACTION_MODEL
const authorizationOf = (request: RecordedRequest) => request.headers["authorization"]

interface JobRow {
  readonly id: string
  readonly status: string
  readonly attempts: number
  readonly last_error: string | null
  readonly key_id: string | null
}

const environment = (provider: FakeUpstream, extra: Record<string, string> = {}) => ({
  UPSTREAM_BASE_URL: provider.url,
  UPSTREAM_API_KEY: OPERATOR,
  SERVICE_API_KEY: APP,
  ADMIN_API_KEY: ADMIN,
  KEY_ENCRYPTION_KEY: "c".repeat(64),
  EXTRACTION_MODEL,
  EXTRACTION_CONCURRENCY: "1",
  EXTRACTION_RETRY_BASE_MS: "50",
  EXTRACTION_MAX_ATTEMPTS: "3",
  SUMMARY_EVERY_CHANGES: "1000",
  ...extra
})

/** Chat requests get an answer; extraction requests the handler's reply (an empty extraction by default). */
const answering =
  (extraction: (request: RecordedRequest) => Reply = () => modelReply({ traits: [], memories: [] })) =>
  (request: RecordedRequest): Reply =>
    isExtraction(request) ? extraction(request) : { kind: "json", status: 200, body: completion({ content: "Noted." }) }

const helpers = (gw: TestGateway) => {
  const createKey = async (upstreamKey: string) => {
    const created = await gw.request<{ id: string; key: string }>("POST", "/api/keys", {
      headers: { authorization: `Bearer ${ADMIN}` },
      json: { namespace: "acme", upstream: { provider: "openai", apiKey: upstreamKey } }
    })
    expect(created.status).toBe(201)
    return created.body
  }
  const say = (key: string, user: string) =>
    new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: key,
      maxRetries: 0,
      defaultHeaders: { "x-service-id": user }
    }).chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: `I am ${user}` }] })
  /** The user's turn job, once it has finished. */
  const finishedJob = (user: string) =>
    eventually(async () => {
      const [job] = await gw.query<JobRow>(
        `SELECT j.id, j.status, j.attempts, j.last_error, j.key_id::text AS key_id FROM extraction_jobs j
         JOIN profiles p ON p.id = j.profile_id WHERE p.external_id = $1 AND j.kind = 'turn'`,
        [user]
      )
      return job !== undefined && (job.status === "succeeded" || job.status === "failed") ? job : undefined
    }, 10_000)
  return { createKey, say, finishedJob }
}

describe("extraction of a turn made with a key bound to a provider key, on that provider", () => {
  let provider: FakeUpstream
  let gw: TestGateway
  let keys: ReturnType<typeof helpers>
  beforeAll(async () => {
    provider = await startFakeUpstream()
    // No EXTRACTION_BASE_URL: the extraction model is on the default provider, where the keys are bound.
    gw = await startGateway(environment(provider))
    keys = helpers(gw)
  })
  afterAll(async () => {
    await gw.close()
    await provider.close()
  })
  beforeEach(() => {
    provider.reset()
    provider.handler = answering()
  })

  it("goes with the bound provider key, not the operator's; a turn of the gateway's own key with the operator's", async () => {
    const bound = await keys.createKey(BOUND)
    await keys.say(bound.key, "tenant-user")
    expect(await keys.finishedJob("tenant-user")).toMatchObject({ status: "succeeded", key_id: bound.id })
    await keys.say(APP, "operator-user")
    expect(await keys.finishedJob("operator-user")).toMatchObject({ status: "succeeded", key_id: null })

    const extractions = provider.requests.filter(isExtraction)
    expect(extractions.map(authorizationOf)).toEqual([`Bearer ${BOUND}`, `Bearer ${OPERATOR}`])
    // The chat requests went with the same keys.
    expect(provider.requests.filter((request) => !isExtraction(request)).map(authorizationOf)).toEqual([
      `Bearer ${BOUND}`,
      `Bearer ${OPERATOR}`
    ])
  })

  it("keeps no key in a failed job's error", async () => {
    const bound = await keys.createKey(BOUND)
    provider.handler = answering((request) => ({
      kind: "json",
      status: 401,
      body: { error: { message: `Incorrect API key provided: ${String(authorizationOf(request)).slice(7)}` } }
    }))
    await keys.say(bound.key, "tenant-refused")
    const job = await keys.finishedJob("tenant-refused")
    expect(job).toMatchObject({ status: "failed", attempts: 3 })
    expect(job.last_error).toContain("401")
    expect(job.last_error).not.toContain(BOUND)
    expect(job.last_error).not.toContain(OPERATOR)
  })

  it("fails a turn whose key was revoked before its extraction at once, unless a key rotated from it lives on", async () => {
    const revoked = await keys.createKey(BOUND)
    const rotating = await keys.createKey(ROTATED)
    // The worker (one loop) is held by a first job while the other turns queue behind it.
    let release: (reply: Reply) => void = () => {}
    const held = new Promise<Reply>((resolve) => (release = resolve))
    let first = true
    provider.handler = answering(() => {
      if (!first) return modelReply({ traits: [], memories: [] })
      first = false
      return { kind: "later", reply: held }
    })
    await keys.say(APP, "holding-user")
    await eventually(async () => (provider.requests.some(isExtraction) ? true : undefined))

    await keys.say(revoked.key, "revoked-user")
    await keys.say(rotating.key, "rotated-user")
    const rotated = await gw.request<{ id: string }>("POST", `/api/keys/${rotating.id}/rotate`, {
      headers: { authorization: `Bearer ${ADMIN}` },
      json: { graceSeconds: 60 }
    })
    expect(rotated.status).toBe(201)
    for (const id of [revoked.id, rotating.id]) {
      expect(
        (await gw.request("DELETE", `/api/keys/${id}`, { headers: { authorization: `Bearer ${ADMIN}` } })).status
      ).toBe(200)
    }
    release(modelReply({ traits: [], memories: [] }))

    const failed = await keys.finishedJob("revoked-user")
    expect(failed).toMatchObject({ status: "failed", attempts: 1, key_id: revoked.id })
    expect(failed.last_error).toContain("revoked")
    // The rotated key carries the same provider key: the binding holds.
    expect(await keys.finishedJob("rotated-user")).toMatchObject({ status: "succeeded", key_id: rotating.id })
    // Neither the revoked key's provider key nor the operator's was used for its turn.
    expect(provider.requests.filter(isExtraction).map(authorizationOf)).toEqual([
      `Bearer ${OPERATOR}`,
      `Bearer ${ROTATED}`
    ])
  })
})

describe("extraction of a turn made with a key bound to a provider key, on another endpoint", () => {
  let provider: FakeUpstream
  let model: FakeUpstream
  let gw: TestGateway
  beforeAll(async () => {
    provider = await startFakeUpstream()
    model = await startFakeUpstream()
    gw = await startGateway(
      environment(provider, { EXTRACTION_BASE_URL: model.url, EXTRACTION_API_KEY: "operator-extraction-key" })
    )
  })
  afterAll(async () => {
    await gw.close()
    await provider.close()
    await model.close()
  })

  it("goes with the operator's extraction key: the bound key is for its own provider only", async () => {
    provider.handler = answering()
    model.handler = answering()
    const { createKey, say, finishedJob } = helpers(gw)
    const bound = await createKey(BOUND)
    await say(bound.key, "elsewhere-user")
    expect(await finishedJob("elsewhere-user")).toMatchObject({ status: "succeeded", key_id: bound.id })
    expect(model.requests.filter(isExtraction).map(authorizationOf)).toEqual(["Bearer operator-extraction-key"])
    expect(provider.requests.map(authorizationOf)).toEqual([`Bearer ${BOUND}`])
  })
})
