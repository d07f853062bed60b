import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { anthropicEvent, anthropicMessage } from "./support/anthropicWire.ts"
import {
  completion,
  eventually,
  type FakeUpstream,
  type RecordedRequest,
  startFakeUpstream
} from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

/**
 * Token usage: every answer's tokens, exactly as the provider reported them, recorded with its key,
 * user, model and namespace on whichever replica answered, summed per day in the database and read
 * back by `/api/usage` and `/api/profiles/{id}/usage`, priced from `MODEL_PRICES`.
 */

const ADMIN = "sk-admin-usage-0123456789"

interface Tokens {
  readonly input: number
  readonly cached: number
  readonly cacheWrite: number
  readonly output: number
  readonly reasoning: number
}

// What the scripted providers report for each kind of answer.
const CHAT: Tokens = { input: 120, cached: 64, cacheWrite: 0, output: 30, reasoning: 10 }
const CHAT_STREAM: Tokens = { input: 80, cached: 0, cacheWrite: 0, output: 12, reasoning: 0 }
const RESPONSES: Tokens = { input: 200, cached: 100, cacheWrite: 0, output: 20, reasoning: 5 }
const RESPONSES_STREAM: Tokens = { input: 90, cached: 30, cacheWrite: 0, output: 9, reasoning: 0 }
// Anthropic: 10 uncached + 50 read from its cache + 20 written to it.
const MESSAGES: Tokens = { input: 80, cached: 50, cacheWrite: 20, output: 7, reasoning: 0 }

const chatUsage = (t: Tokens) => ({
  prompt_tokens: t.input,
  completion_tokens: t.output,
  total_tokens: t.input + t.output,
  prompt_tokens_details: { cached_tokens: t.cached },
  completion_tokens_details: { reasoning_tokens: t.reasoning }
})
const responsesUsage = (t: Tokens) => ({
  input_tokens: t.input,
  input_tokens_details: { cached_tokens: t.cached },
  output_tokens: t.output,
  output_tokens_details: { reasoning_tokens: t.reasoning },
  total_tokens: t.input + t.output
})
const messagesUsage = (t: Tokens, output = t.output) => ({
  input_tokens: t.input - t.cached - t.cacheWrite,
  cache_read_input_tokens: t.cached,
  cache_creation_input_tokens: t.cacheWrite,
  output_tokens: output
})

const chatChunk = (fields: Record<string, unknown>) =>
  `data: ${JSON.stringify({ id: "chatcmpl-u", object: "chat.completion.chunk", created: 1_700_000_000, model: "gpt-a", ...fields })}\n\n`
const responseObject = (usage: unknown) => ({
  id: "resp_u",
  object: "response",
  created_at: 1_700_000_000,
  status: "completed",
  model: "gpt-a",
  output: [
    {
      type: "message",
      id: "msg_u",
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text: "Noted", annotations: [] }]
    }
  ],
  ...(usage === undefined ? {} : { usage })
})
const responsesEvent = (type: string, response: unknown) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, response })}\n\n`

/** The OpenAI-compatible provider: each API's answer, streamed when asked, with its usage. */
const openaiAnswer = (request: RecordedRequest) => {
  const stream = request.body?.["stream"] === true
  if (request.path.endsWith("/chat/completions")) {
    if (!stream)
      return {
        kind: "json" as const,
        status: 200,
        body: { ...completion({ content: "Noted" }), usage: chatUsage(CHAT) }
      }
    return {
      kind: "sse" as const,
      frames: [
        chatChunk({
          choices: [{ index: 0, delta: { role: "assistant", content: "Noted" }, finish_reason: null }],
          usage: null
        }),
        chatChunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: null }),
        chatChunk({ choices: [], usage: chatUsage(CHAT_STREAM) }),
        "data: [DONE]\n\n"
      ]
    }
  }
  if (request.path.endsWith("/responses")) {
    if (!stream) return { kind: "json" as const, status: 200, body: responseObject(responsesUsage(RESPONSES)) }
    return {
      kind: "sse" as const,
      frames: [
        responsesEvent("response.created", { ...responseObject(undefined), status: "in_progress", output: [] }),
        responsesEvent("response.completed", responseObject(responsesUsage(RESPONSES_STREAM)))
      ]
    }
  }
  return undefined
}

/** Anthropic: the input figures with `message_start`, the output's with `message_delta`. */
const anthropicAnswer = (request: RecordedRequest) => {
  if (request.body?.["stream"] !== true)
    return {
      kind: "json" as const,
      status: 200,
      body: anthropicMessage([{ type: "text", text: "Noted" }], "end_turn", messagesUsage(MESSAGES))
    }
  return {
    kind: "sse" as const,
    frames: [
      anthropicEvent("message_start", {
        message: { ...anthropicMessage([], ""), stop_reason: null, usage: messagesUsage(MESSAGES, 1) }
      }),
      anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
      anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Noted" } }),
      anthropicEvent("content_block_stop", { index: 0 }),
      anthropicEvent("message_delta", {
        delta: { stop_reason: "end_turn", stop_sequence: null },
        usage: { output_tokens: MESSAGES.output }
      }),
      anthropicEvent("message_stop", {})
    ]
  }
}

interface UsageRow {
  readonly group: string | null
  readonly requests: number
  readonly unreportedRequests: number
  readonly inputTokens: number
  readonly cachedInputTokens: number
  readonly cacheWriteTokens: number
  readonly outputTokens: number
  readonly reasoningTokens: number
  readonly injectedTokens: number
  readonly memoryWorkTokens: number
  readonly memoryWorkCalls: number
  readonly cost: number | null
  readonly lastAt: string | null
}
interface UsageReport {
  readonly period: { readonly from: string; readonly to: string }
  readonly usage: ReadonlyArray<UsageRow>
}

interface Totals {
  requests: number
  inputTokens: number
  cachedInputTokens: number
  cacheWriteTokens: number
  outputTokens: number
  reasoningTokens: number
}
const zero = (): Totals => ({
  requests: 0,
  inputTokens: 0,
  cachedInputTokens: 0,
  cacheWriteTokens: 0,
  outputTokens: 0,
  reasoningTokens: 0
})
const add = (totals: Totals, t: Tokens) => {
  totals.requests += 1
  totals.inputTokens += t.input
  totals.cachedInputTokens += t.cached
  totals.cacheWriteTokens += t.cacheWrite
  totals.outputTokens += t.output
  totals.reasoningTokens += t.reasoning
}
const totalsOf = (row: UsageRow | undefined): Totals => ({
  requests: row?.requests ?? 0,
  inputTokens: row?.inputTokens ?? 0,
  cachedInputTokens: row?.cachedInputTokens ?? 0,
  cacheWriteTokens: row?.cacheWriteTokens ?? 0,
  outputTokens: row?.outputTokens ?? 0,
  reasoningTokens: row?.reasoningTokens ?? 0
})

const drain = async (stream: AsyncIterable<unknown>) => {
  for await (const _ of stream) {
    // read to the end
  }
}

describe("token usage", () => {
  let openaiUp: FakeUpstream
  let anthropicUp: FakeUpstream
  let gw: TestGateway
  let replica: TestGateway
  const keys: Array<{ readonly id: string; readonly key: string }> = []

  beforeAll(async () => {
    openaiUp = await startFakeUpstream()
    anthropicUp = await startFakeUpstream()
    openaiUp.handler = openaiAnswer
    anthropicUp.handler = anthropicAnswer
    const dir = mkdtempSync(join(tmpdir(), "usage-prices-"))
    const prices = join(dir, "prices.json")
    writeFileSync(prices, JSON.stringify({ "gpt-a": { input: 2, cachedInput: 0.5, output: 8 } }))
    const env = {
      UPSTREAM_BASE_URL: openaiUp.url,
      UPSTREAM_API_KEY: "sk-test-upstream",
      ANTHROPIC_BASE_URL: anthropicUp.url,
      ANTHROPIC_API_KEY: "sk-ant-test-usage",
      ADMIN_API_KEY: ADMIN,
      MODEL_PRICES: prices,
      AUTH_FAILURES_PER_MINUTE: "0"
    }
    gw = await startGateway(env)
    replica = await startGateway(env, { databaseUrl: gw.databaseUrl })
    for (const label of ["web", "batch"]) {
      const created = await gw.request<{ id: string; key: string }>("POST", "/api/keys", {
        headers: { authorization: `Bearer ${ADMIN}` },
        json: { namespace: "acme", scope: "app", label }
      })
      expect(created.status).toBe(201)
      keys.push(created.body)
    }
    // Each replica checks the keys held in the database every second: wait until both admit them.
    for (const replicaGw of [gw, replica])
      for (const { key } of keys)
        await eventually(async () => {
          const models = await replicaGw.request("GET", "/v1/models", { headers: { authorization: `Bearer ${key}` } })
          return models.status === 200 ? true : undefined
        })
  })
  afterAll(async () => {
    await replica?.close()
    await gw?.close()
    await openaiUp?.close()
    await anthropicUp?.close()
  })

  const adminGet = <T>(path: string) => gw.request<T>("GET", path, { headers: { authorization: `Bearer ${ADMIN}` } })

  /** The report once its rows hold `requests` requests in all (usage is written just after each answer). */
  const reportWith = (path: string, requests: number) =>
    eventually(async () => {
      const report = await adminGet<UsageReport>(path)
      expect(report.status).toBe(200)
      const total = report.body.usage.reduce((sum, row) => sum + row.requests, 0)
      return total >= requests ? report.body : undefined
    }, 10_000)

  const openai = (target: TestGateway, key: string, user: string) =>
    new OpenAI({
      baseURL: `${target.baseUrl}/v1`,
      apiKey: key,
      maxRetries: 0,
      defaultHeaders: { "x-service-id": user }
    })
  const anthropic = (target: TestGateway, key: string, user: string) =>
    new Anthropic({ baseURL: target.baseUrl, apiKey: key, maxRetries: 0, defaultHeaders: { "x-service-id": user } })

  /** One request of each kind: what it asks, and the tokens its provider reports. */
  const kinds: ReadonlyArray<{
    readonly model: string
    readonly tokens: Tokens
    readonly send: (target: TestGateway, key: string, user: string) => Promise<void>
  }> = [
    {
      model: "gpt-a",
      tokens: CHAT,
      send: async (target, key, user) => {
        await openai(target, key, user).chat.completions.create({
          model: "gpt-a",
          messages: [{ role: "user", content: "hi" }]
        })
      }
    },
    {
      model: "gpt-a",
      tokens: CHAT_STREAM,
      send: async (target, key, user) =>
        drain(
          await openai(target, key, user).chat.completions.create({
            model: "gpt-a",
            messages: [{ role: "user", content: "hi" }],
            stream: true,
            stream_options: { include_usage: true }
          })
        )
    },
    {
      // Not asking for the usage chunk: the gateway asks for it, and counts it.
      model: "gpt-a",
      tokens: CHAT_STREAM,
      send: async (target, key, user) =>
        drain(
          await openai(target, key, user).chat.completions.create({
            model: "gpt-a",
            messages: [{ role: "user", content: "hi" }],
            stream: true
          })
        )
    },
    {
      model: "gpt-a",
      tokens: RESPONSES,
      send: async (target, key, user) => {
        await openai(target, key, user).responses.create({ model: "gpt-a", input: "hi", store: false })
      }
    },
    {
      model: "gpt-a",
      tokens: RESPONSES_STREAM,
      send: async (target, key, user) =>
        drain(
          await openai(target, key, user).responses.create({ model: "gpt-a", input: "hi", store: false, stream: true })
        )
    },
    {
      model: "claude-a",
      tokens: MESSAGES,
      send: async (target, key, user) => {
        await anthropic(target, key, user).messages.create({
          model: "claude-a",
          max_tokens: 64,
          messages: [{ role: "user", content: "hi" }]
        })
      }
    },
    {
      model: "claude-a",
      tokens: MESSAGES,
      send: async (target, key, user) =>
        drain(
          await anthropic(target, key, user).messages.create({
            model: "claude-a",
            max_tokens: 64,
            messages: [{ role: "user", content: "hi" }],
            stream: true
          })
        )
    }
  ]

  it("sums, token for token, what the providers reported: every API, streamed or not, on either replica", async () => {
    const byKey = new Map<string, Totals>()
    const byUser = new Map<string, Totals>()
    const byModel = new Map<string, Totals>()
    const users = ["ann", "bob", "cy"]
    for (let i = 0; i < 28; i++) {
      const kind = kinds[i % kinds.length]!
      const { id, key } = keys[i % 2]!
      const user = users[i % 3]!
      await kind.send(i % 4 < 2 ? gw : replica, key, user)
      for (const [map, group] of [
        [byKey, id],
        [byUser, user],
        [byModel, kind.model]
      ] as const) {
        const totals = map.get(group) ?? zero()
        add(totals, kind.tokens)
        map.set(group, totals)
      }
    }

    const perKey = await reportWith("/api/usage?groupBy=key", 28)
    expect(new Map(perKey.usage.map((row) => [row.group, totalsOf(row)]))).toEqual(byKey)
    const perUser = await reportWith("/api/usage?groupBy=user", 28)
    expect(new Map(perUser.usage.map((row) => [row.group, totalsOf(row)]))).toEqual(byUser)
    const perModel = await reportWith("/api/usage?groupBy=model", 28)
    expect(new Map(perModel.usage.map((row) => [row.group, totalsOf(row)]))).toEqual(byModel)

    // One namespace, one day: the same totals in one row.
    const today = new Date().toISOString().slice(0, 10)
    const perDay = await reportWith(`/api/usage?groupBy=day&from=${today}&to=${today}`, 28)
    expect(perDay.period).toEqual({ from: today, to: today })
    expect(perDay.usage.map((row) => row.group)).toEqual([today])
    const all = zero()
    for (const totals of byKey.values()) {
      all.requests += totals.requests
      all.inputTokens += totals.inputTokens
      all.cachedInputTokens += totals.cachedInputTokens
      all.cacheWriteTokens += totals.cacheWriteTokens
      all.outputTokens += totals.outputTokens
      all.reasoningTokens += totals.reasoningTokens
    }
    expect(totalsOf(perDay.usage[0])).toEqual(all)
    const perNamespace = await reportWith("/api/usage?groupBy=namespace", 28)
    expect(perNamespace.usage.map((row) => [row.group, totalsOf(row)])).toEqual([["acme", all]])

    // Priced where the operator gave a price: gpt-a's uncached input at 2, cached at 0.5, output at 8 per million.
    const gpt = byModel.get("gpt-a")!
    const expectedCost =
      ((gpt.inputTokens - gpt.cachedInputTokens) * 2 + gpt.cachedInputTokens * 0.5 + gpt.outputTokens * 8) / 1_000_000
    const priced = perModel.usage.find((row) => row.group === "gpt-a")!
    expect(priced.cost).toBeCloseTo(expectedCost, 12)
    expect(perModel.usage.find((row) => row.group === "claude-a")!.cost).toBeNull()
    expect(perKey.usage.every((row) => row.cost === null)).toBe(true)

    // A user's own usage, on their profile.
    const annUsage = await gw.request<UsageReport>("GET", `/api/profiles/ann/usage?groupBy=model`, {
      headers: { authorization: `Bearer ${ADMIN}`, "x-service-namespace": "acme" }
    })
    expect(annUsage.status).toBe(200)
    const annTotals = zero()
    for (const row of annUsage.body.usage) {
      const t = totalsOf(row)
      annTotals.requests += t.requests
      annTotals.inputTokens += t.inputTokens
      annTotals.cachedInputTokens += t.cachedInputTokens
      annTotals.cacheWriteTokens += t.cacheWriteTokens
      annTotals.outputTokens += t.outputTokens
      annTotals.reasoningTokens += t.reasoningTokens
    }
    expect(annTotals).toEqual(byUser.get("ann"))
  })

  it("shows a namespace's admin only its own namespace's usage", async () => {
    const created = await gw.request<{ key: string }>("POST", "/api/keys", {
      headers: { authorization: `Bearer ${ADMIN}` },
      json: { namespace: "globex", scope: "admin" }
    })
    expect(created.status).toBe(201)
    const report = await eventually(async () => {
      const seen = await gw.request<UsageReport>("GET", "/api/usage?groupBy=namespace", {
        headers: { authorization: `Bearer ${created.body.key}` }
      })
      return seen.status === 200 ? seen.body : undefined
    })
    expect(report.usage).toEqual([])
  })

  it("refuses a period that is not one, or a grouping it does not know, with a 400", async () => {
    for (const query of ["groupBy=week", "from=2026-13-01", "from=yesterday", "from=2026-11-02&to=2026-11-01"]) {
      const response = await adminGet<{ error: { code: string; type: string; message: string } }>(`/api/usage?${query}`)
      expect(response.status, query).toBe(400)
      expect(response.body.error.type).toBe("invalid_request_error")
      if (query.startsWith("from")) expect(response.body.error.code).toBe("invalid_usage_period")
    }
  })
})

describe("memory work and injected memory", () => {
  const EXTRACTION: Tokens = { input: 700, cached: 0, cacheWrite: 0, output: 60, reasoning: 0 }
  let upstream: FakeUpstream
  let model: FakeUpstream
  let gw: TestGateway

  beforeAll(async () => {
    upstream = await startFakeUpstream()
    model = await startFakeUpstream()
    upstream.handler = openaiAnswer
    // The extraction model: nothing to learn, and the tokens it took.
    model.handler = () => ({
      kind: "json",
      status: 200,
      body: { ...completion({ content: JSON.stringify({ traits: [], memories: [] }) }), usage: chatUsage(EXTRACTION) }
    })
    gw = await startGateway({
      UPSTREAM_BASE_URL: upstream.url,
      UPSTREAM_API_KEY: "sk-test-upstream",
      ADMIN_API_KEY: ADMIN,
      SERVICE_API_KEY: "sk-app-usage-memory",
      EXTRACTION_BASE_URL: model.url,
      EXTRACTION_API_KEY: "sk-test-extraction",
      EXTRACTION_MODEL: "extractor-1",
      EXTRACTION_CONCURRENCY: "1",
      SUMMARY_EVERY_CHANGES: "100000",
      SUMMARY_MAX_AGE_HOURS: "100000"
    })
  })
  afterAll(async () => {
    await gw?.close()
    await upstream?.close()
    await model?.close()
  })

  it("records the extraction model's tokens as the user's memory work, apart from the app's own", async () => {
    const client = new OpenAI({
      baseURL: `${gw.baseUrl}/v1`,
      apiKey: "sk-app-usage-memory",
      maxRetries: 0,
      defaultHeaders: { "x-service-id": "dana" }
    })
    await client.chat.completions.create({ model: "gpt-a", messages: [{ role: "user", content: "I moved to Lyon" }] })
    const report = await eventually(async () => {
      const seen = await gw.request<UsageReport>("GET", "/api/usage?groupBy=work", {
        headers: { authorization: `Bearer ${ADMIN}` }
      })
      return seen.body.usage.some((row) => row.group === "extraction") ? seen.body : undefined
    }, 10_000)
    const work = new Map(report.usage.map((row) => [row.group, row]))
    expect(totalsOf(work.get("app"))).toEqual({
      requests: 1,
      inputTokens: CHAT.input,
      cachedInputTokens: CHAT.cached,
      cacheWriteTokens: 0,
      outputTokens: CHAT.output,
      reasoningTokens: CHAT.reasoning
    })
    expect(work.get("extraction")).toMatchObject({
      requests: 0,
      inputTokens: 0,
      memoryWorkTokens: EXTRACTION.input + EXTRACTION.output,
      memoryWorkCalls: 1
    })
    // The job knew only its profile: the work is the profile's namespace's and user's.
    const perUser = await gw.request<UsageReport>("GET", "/api/usage?groupBy=user", {
      headers: { authorization: `Bearer ${ADMIN}` }
    })
    expect(perUser.body.usage).toEqual([
      expect.objectContaining({ group: "dana", requests: 1, memoryWorkTokens: 760, memoryWorkCalls: 1 })
    ])
    const perModel = await gw.request<UsageReport>("GET", "/api/profiles/dana/usage?groupBy=model", {
      headers: { authorization: `Bearer ${ADMIN}` }
    })
    expect(perModel.body.usage.map((row) => row.group).sort()).toEqual(["extractor-1", "gpt-a"])
  })

  it("counts the memory injected into each request, as its receipt estimated it", async () => {
    const profile = await gw.request("POST", "/api/profiles", {
      headers: { authorization: `Bearer ${ADMIN}` },
      json: { externalId: "erin" }
    })
    expect(profile.status).toBe(201)
    const added = await gw.request("POST", "/api/profiles/erin/memories", {
      headers: { authorization: `Bearer ${ADMIN}` },
      json: { content: "Prefers window seats on long flights", type: "preference" }
    })
    expect(added.status).toBe(201)
    const response = await fetch(`${gw.baseUrl}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: "Bearer sk-app-usage-memory",
        "content-type": "application/json",
        "x-service-id": "erin"
      },
      body: JSON.stringify({ model: "gpt-a", messages: [{ role: "user", content: "Book me a flight" }] })
    })
    expect(response.status).toBe(200)
    const receipt = JSON.parse(response.headers.get("x-service-context")!) as { estimatedTokens: number }
    expect(receipt.estimatedTokens).toBeGreaterThan(0)
    const usage = await eventually(async () => {
      const seen = await gw.request<UsageReport>("GET", "/api/profiles/erin/usage", {
        headers: { authorization: `Bearer ${ADMIN}` }
      })
      return seen.body.usage[0]?.requests === 1 ? seen.body.usage[0] : undefined
    })
    expect(usage.injectedTokens).toBe(receipt.estimatedTokens)
  })
})
