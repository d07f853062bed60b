import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, FAKE_EMBEDDING_DIMENSIONS, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { createDatabase, startGateway, type TestGateway } from "./support/gateway.ts"
import { injectedText } from "./support/injected.ts"

/** Where memory vectors come from: the embed jobs, the backfill after an upgrade or a model change, and each mode. */

let up: FakeUpstream
beforeAll(async () => {
  up = await startFakeUpstream()
})
afterAll(() => up.close())

const seed = async (gw: TestGateway, externalId: string, contents: ReadonlyArray<string>) => {
  await gw.request("POST", "/api/profiles", { json: { externalId } })
  const res = await gw.request("POST", `/api/profiles/${externalId}/memories/import`, {
    json: { memories: contents.map((content) => ({ content, type: "fact" })) }
  })
  expect(res.status).toBe(201)
}

interface VectorRow {
  readonly content: string
  readonly model: string | null
  readonly dimensions: number | null
}
const vectorsOf = (gw: TestGateway) =>
  gw.query<VectorRow>(
    `SELECT m.content, v.model, v.dimensions FROM memories m LEFT JOIN memory_vectors v ON v.memory_id = m.id ORDER BY m.content`
  )

const embedJobs = (gw: TestGateway) =>
  gw
    .request<{
      counts: Record<string, number>
      jobs: Array<{ kind: string; status: string; result: { model: string; embedded: number } | null }>
    }>("GET", "/api/jobs?status=succeeded&limit=100")
    .then((res) => res.body.jobs.filter((job) => job.kind === "embed"))

const allEmbedded = (gw: TestGateway, model: (m: string | null) => boolean) =>
  eventually(async () => {
    const rows = await vectorsOf(gw)
    return rows.length > 0 && rows.every((row) => model(row.model)) ? rows : undefined
  }, 20_000)

const isLocal = (model: string | null) => model?.startsWith("local/") === true

describe("with EMBEDDINGS=off", () => {
  it("queues no embedding and ranks by keywords", async () => {
    const gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-test",
      EMBEDDINGS: "off",
      EMBEDDING_CONCURRENCY: "1"
    })
    try {
      await seed(
        gw,
        "plain",
        Array.from({ length: 12 }, (_, i) => `Keeps bees, hive number ${i}`)
      )
      expect(await gw.query("SELECT 1 FROM extraction_jobs WHERE kind = 'embed'")).toEqual([])
      const client = new OpenAI({
        baseURL: `${gw.baseUrl}/v1`,
        apiKey: "x",
        maxRetries: 0,
        defaultHeaders: { "X-Service-Id": "plain" }
      })
      const { response } = await client.chat.completions
        .create({ model: "m", messages: [{ role: "user", content: "How are the bees?" }] })
        .withResponse()
      const receipt = JSON.parse(response.headers.get("x-service-context")!) as {
        retrieval: string
        memories: Array<string>
        semantic?: string
      }
      expect(receipt.retrieval).toBe("keyword")
      expect(receipt.semantic).toBeUndefined()
      expect(receipt.memories.length).toBeGreaterThan(0)
    } finally {
      await gw.close()
    }
  })
})

/** A gauge's value as `/metrics` shows it. */
const gauge = async (gw: TestGateway, name: string) => {
  const res = await gw.request<string>("GET", "/metrics")
  const line = res.text.split("\n").find((candidate) => candidate.startsWith(`${name} `))
  return line === undefined ? undefined : Number(line.slice(name.length + 1))
}

describe("the local model's thread", () => {
  it("starts with the first memory to embed, not with the gateway", async () => {
    const gw = await startGateway({ EMBEDDINGS: "local", UPSTREAM_BASE_URL: up.url, UPSTREAM_API_KEY: "sk-lazy" })
    try {
      // A completion for a profile without memories needs no vector.
      const client = new OpenAI({ baseURL: `${gw.baseUrl}/v1`, apiKey: "unused", maxRetries: 0 })
      await client.chat.completions.create(
        { model: "gpt-4o-mini", messages: [{ role: "user", content: "Hello" }] },
        { headers: { "X-Service-Id": "no-memories-yet" } }
      )
      expect(await gauge(gw, "gateway_embedding_threads")).toBe(0)

      await seed(gw, "first-memories", ["Keeps bees on the roof"])
      const rows = await allEmbedded(gw, isLocal)
      expect(rows).toHaveLength(1)
      expect(await gauge(gw, "gateway_embedding_threads")).toBe(1)
    } finally {
      await gw.close()
    }
  })
})

describe("the backfill", () => {
  it("embeds the memories written before embeddings were on, and all of them again after a model change", async () => {
    const databaseUrl = await createDatabase()
    const before = await startGateway({ EMBEDDINGS: "off" }, { databaseUrl })
    await seed(before, "old-timer", ["Sings in a choir", "Has two cats", "Bakes sourdough on Sundays"])
    await before.close()

    // The upgrade: a gateway with the local model queues the profile's embedding and works it off.
    const after = await startGateway({ EMBEDDINGS: "local" }, { databaseUrl })
    let model: string
    try {
      const rows = await allEmbedded(after, isLocal)
      model = rows[0]!.model!
      expect(rows.map((row) => [row.content, row.dimensions])).toEqual([
        ["Bakes sourdough on Sundays", 512],
        ["Has two cats", 512],
        ["Sings in a choir", 512]
      ])
      // The vectors commit before their job's completion does (a batch at a time): wait for that too.
      const jobs = await eventually(async () => {
        const done = await embedJobs(after)
        return done.length > 0 ? done : undefined
      })
      expect(jobs.map((job) => job.result?.embedded)).toEqual([3])
      // The search says none is left to embed.
      const search = await after.request<{ retrieval: { unembedded: number } }>(
        "POST",
        "/api/profiles/old-timer/memories/search",
        { json: { query: "choir" } }
      )
      expect(search.body.retrieval.unembedded).toBe(0)
    } finally {
      await after.close()
    }

    // Vectors of another model are stale: the next start embeds everything again.
    const changed = await startGateway({ EMBEDDINGS: "local", EMBEDDING_CONCURRENCY: "0" }, { databaseUrl })
    await changed.query("UPDATE memory_vectors SET model = 'local/an-older-model@0.1.0'")
    await changed.close()
    const restarted = await startGateway({ EMBEDDINGS: "local" }, { databaseUrl })
    try {
      const rows = await allEmbedded(restarted, (m) => m === model)
      expect(rows).toHaveLength(3)
    } finally {
      await restarted.close()
    }
  })
})

describe("with EMBEDDINGS=provider", () => {
  it("embeds through an OpenAI-compatible /embeddings endpoint, memories in the background and queries on the request path", async () => {
    const gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-chat",
      EMBEDDINGS: "provider",
      EMBEDDING_BASE_URL: up.url,
      EMBEDDING_MODEL: "embed-test",
      EMBEDDING_API_KEY: "sk-embeddings"
    })
    try {
      up.reset()
      await seed(
        gw,
        "provided",
        Array.from({ length: 12 }, (_, i) =>
          i === 0 ? "Plays the cello in an orchestra" : `Collects stamps from country ${i}`
        )
      )
      const rows = await allEmbedded(gw, (m) => m === `provider/${new URL(up.url).host}/embed-test`)
      expect(rows.every((row) => row.dimensions === FAKE_EMBEDDING_DIMENSIONS)).toBe(true)
      const batch = up.requests.find((request) => request.path === "/v1/embeddings")!
      expect(batch.headers["authorization"]).toBe("Bearer sk-embeddings")
      expect(batch.body).toMatchObject({ model: "embed-test", encoding_format: "float" })
      expect(batch.body!["input"]).toHaveLength(12)

      up.reset()
      const client = new OpenAI({
        baseURL: `${gw.baseUrl}/v1`,
        apiKey: "x",
        maxRetries: 0,
        defaultHeaders: { "X-Service-Id": "provided" }
      })
      const { response } = await client.chat.completions
        .create({ model: "m", messages: [{ role: "user", content: "any tips about my cello" }] })
        .withResponse()
      expect(JSON.parse(response.headers.get("x-service-context")!)).toMatchObject({ retrieval: "fused" })
      expect(up.requests.find((request) => request.path === "/v1/embeddings")!.body).toMatchObject({
        model: "embed-test",
        input: ["any tips about my cello"]
      })
      const injected = injectedText(up.requests.find((request) => request.path === "/v1/chat/completions")!.body)
      expect(injected.split("\n").filter((line) => line.startsWith("- ("))[0]).toBe(
        "- (fact) Plays the cello in an orchestra"
      )

      // The provider's embedding tokens are memory work: the memories' for their user, the query's for the namespace.
      type Row = { group: string | null; memoryWorkTokens: number; memoryWorkCalls: number }
      const perUser = await eventually(async () => {
        const seen = await gw.request<{ usage: Array<Row> }>("GET", "/api/usage?groupBy=user")
        const calls = seen.body.usage.reduce((sum, row) => sum + row.memoryWorkCalls, 0)
        return calls >= 2 ? seen.body.usage : undefined
      })
      expect(perUser.map(({ group, memoryWorkTokens }) => ({ group, memoryWorkTokens }))).toEqual(
        expect.arrayContaining([
          { group: "provided", memoryWorkTokens: 12 },
          { group: null, memoryWorkTokens: 1 }
        ])
      )
    } finally {
      await gw.close()
    }
  })

  it("retries embed jobs while the provider fails, and answers requests meanwhile", async () => {
    const failing = await startFakeUpstream()
    failing.handler = (request) =>
      request.path.endsWith("/embeddings")
        ? { kind: "json", status: 503, body: { error: { message: "overloaded" } } }
        : undefined
    const gw = await startGateway({
      UPSTREAM_BASE_URL: failing.url,
      UPSTREAM_API_KEY: "sk-chat",
      EMBEDDINGS: "provider",
      EMBEDDING_BASE_URL: failing.url,
      EXTRACTION_RETRY_BASE_MS: "20",
      EXTRACTION_MAX_ATTEMPTS: "2"
    })
    try {
      await seed(
        gw,
        "unlucky",
        Array.from({ length: 12 }, (_, i) => `Fact number ${i} about gardening`)
      )
      const [job] = await eventually(async () => {
        const rows = await gw.query<{ status: string; attempts: number; last_error: string }>(
          "SELECT status, attempts, last_error FROM extraction_jobs WHERE kind = 'embed'"
        )
        return rows[0]?.status === "failed" ? rows : undefined
      }, 20_000)
      expect(job).toMatchObject({ attempts: 2 })
      expect(job!.last_error).toContain("503")

      const client = new OpenAI({
        baseURL: `${gw.baseUrl}/v1`,
        apiKey: "x",
        maxRetries: 0,
        defaultHeaders: { "X-Service-Id": "unlucky" }
      })
      const { response } = await client.chat.completions
        .create({ model: "m", messages: [{ role: "user", content: "gardening tips?" }] })
        .withResponse()
      expect(response.status).toBe(200)
      // No vector has been stored, so the profile is ranked by keywords, and the search says how many wait.
      expect(JSON.parse(response.headers.get("x-service-context")!)).toMatchObject({
        retrieval: "keyword",
        semantic: "no_vectors"
      })
      const search = await gw.request<{ retrieval: { unembedded: number; semantic: string } }>(
        "POST",
        "/api/profiles/unlucky/memories/search",
        { json: { query: "gardening" } }
      )
      expect(search.body.retrieval).toMatchObject({ unembedded: 12, semantic: "no_vectors" })
    } finally {
      await gw.close()
      await failing.close()
    }
  })
})

describe("a memory written while a worker claims its profile's embed job", () => {
  it("gets a job of its own: the claim that read before it cannot take the job it counted on", async () => {
    // No embedding loop: the test plays the worker, with a connection of its own.
    const gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-chat",
      EMBEDDINGS: "provider",
      EMBEDDING_CONCURRENCY: "0"
    })
    const scope = Effect.runSync(Scope.make())
    const worker = await Effect.runPromise(
      Layer.buildWithScope(PgClient.layer({ url: Redacted.make(gw.databaseUrl) }), scope).pipe(
        Effect.map((context) => Context.get(context, PgClient.PgClient))
      )
    )
    try {
      await seed(gw, "raced", ["Keeps bees on the roof"])
      const pendingEmbeds = () =>
        gw.query<{ id: string }>("SELECT id FROM extraction_jobs WHERE kind = 'embed' AND status = 'pending'")
      const [waiting] = await pendingEmbeds()
      expect(waiting).toBeDefined()

      // A claim under way: the waiting job locked, not yet marked running.
      let finishClaim!: () => void
      const claimLocked = Promise.withResolvers<void>()
      const claim = Effect.runPromise(
        worker.withTransaction(
          Effect.gen(function* () {
            yield* worker`SELECT id FROM extraction_jobs WHERE id = ${waiting!.id} FOR UPDATE`
            claimLocked.resolve()
            yield* Effect.promise(() => new Promise<void>((resolve) => (finishClaim = resolve)))
            yield* worker`UPDATE extraction_jobs SET status = 'running', attempts = 1 WHERE id = ${waiting!.id}`
          })
        )
      )
      await claimLocked.promise

      // The new memory's statement meets the locked job: it waits for the claim to end, or (the race
      // this guards against) goes by, trusting a job the worker is about to read past.
      let written = false
      const write = gw
        .request("POST", "/api/profiles/raced/memories", { json: { content: "Has a dog named Rex", type: "fact" } })
        .then((response) => {
          written = true
          return response
        })
      await eventually(async () => {
        if (written) return true
        const blocked = await gw.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return blocked.length > 0 ? true : undefined
      })
      finishClaim()
      await claim
      expect((await write).status).toBe(201)

      // The running job may have read the profile before the memory existed: another one waits for it.
      expect(await pendingEmbeds()).toHaveLength(1)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await gw.close()
    }
  })
})
