import { mkdtemp, rename, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { anthropicEvent, anthropicMessage } from "./support/anthropicWire.ts"
import {
  chunkFrames,
  completion,
  eventually,
  type FakeUpstream,
  type RecordedRequest,
  type Reply,
  startFakeUpstream
} from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { expectError } from "./support/wire.ts"

/**
 * Retries before the first byte, routed models (fallbacks across providers, weights, circuit
 * breakers) and the routes file's reloads, as an app on the official SDKs sees them.
 */

const OPENAI_KEY = "sk-openai-configured-000"
const ANTHROPIC_KEY = "sk-ant-configured-000"
const ROUTED_KEY = "sk-ant-routed-key-999"

/** Where a request went, and after how many attempts: the receipt's `upstream`. */
interface UpstreamReceipt {
  readonly target: string
  readonly attempts: number
  readonly route?: string
  readonly fallbacks?: number
}

const upstreamOf = (headers: Headers): UpstreamReceipt => {
  const context = headers.get("x-service-context")
  expect(context).not.toBeNull()
  return (JSON.parse(context!) as { upstream: UpstreamReceipt }).upstream
}

const openaiClient = (gw: TestGateway, userId: string) =>
  new OpenAI({
    baseURL: `${gw.baseUrl}/v1`,
    apiKey: "unused",
    maxRetries: 0,
    defaultHeaders: { "X-Service-Id": userId }
  })

const chat = (gw: TestGateway, userId: string, model: string, content = "hi") =>
  openaiClient(gw, userId)
    .chat.completions.create({ model, messages: [{ role: "user", content }] })
    .withResponse()

/** The roles of the messages recorded for a user. */
const messagesOf = async (gw: TestGateway, externalId: string) =>
  (
    await gw.query<{ role: string }>(
      "SELECT m.role FROM messages m JOIN profiles p ON p.id = m.profile_id WHERE p.external_id = $1 ORDER BY m.created_at, m.id",
      [externalId]
    )
  ).map((row) => row.role)

/** The requests a fake received for one model. */
const asking = (up: FakeUpstream, model: string) => up.requests.filter((request) => request.body?.["model"] === model)

interface Sample {
  readonly name: string
  readonly labels: Record<string, string>
  readonly value: number
}

const scrape = async (gw: TestGateway): Promise<ReadonlyArray<Sample>> => {
  const response = await gw.request<string>("GET", "/metrics")
  expect(response.status).toBe(200)
  const samples: Array<Sample> = []
  for (const line of response.text.split("\n")) {
    const match = /^([^\s{]+)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null || line.startsWith("#")) continue
    const labels: Record<string, string> = {}
    for (const [, key, value] of (match[2] ?? "").matchAll(/([^=,]+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!
    samples.push({ name: match[1]!, labels, value: Number(match[3]) })
  }
  return samples
}

/** A sample's value (0 when the series is not there). */
const sampleOf = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string>) =>
  samples.find(
    (sample) =>
      sample.name === name &&
      Object.keys(labels).length === Object.keys(sample.labels).length &&
      Object.entries(labels).every(([key, value]) => sample.labels[key] === value)
  )?.value ?? 0

interface RoutesViewJson {
  readonly file: string | null
  readonly retries: number
  readonly routes: ReadonlyArray<{
    readonly model: string
    readonly targets: ReadonlyArray<{ readonly target: string; readonly breaker: string; readonly weight: number }>
  }>
}

const routesView = async (gw: TestGateway) => {
  const response = await gw.request<RoutesViewJson>("GET", "/api/routes")
  expect(response.status).toBe(200)
  return response.body
}

const breakerOf = (view: RoutesViewJson, model: string, target: string) =>
  view.routes.find((route) => route.model === model)?.targets.find((t) => t.target === target)?.breaker

/** Replaces the file in one step (a rename), as editors do: a reload never reads it half written. */
let written = 0
const replaceFile = async (file: string, text: string) => {
  const temporary = `${file}.${written++}.tmp`
  await writeFile(temporary, text)
  await rename(temporary, file)
}

// What the scripted providers answer.

const openaiError = (status: number, headers: Record<string, string> = {}): Extract<Reply, { kind: "json" }> => ({
  kind: "json",
  status,
  body: { error: { message: `scripted ${status}`, type: "server_error", code: null, param: null } },
  headers
})

/** An OpenAI answer naming the model asked for, streamed when asked. */
const openaiAnswer = (request: RecordedRequest): Reply => {
  const model = String(request.body?.["model"])
  return request.body?.["stream"] === true
    ? { kind: "sse", frames: chunkFrames([`from `, model]) }
    : { kind: "json", status: 200, body: completion({ content: `from ${model}`, model }) }
}

const anthropicStream = (pieces: ReadonlyArray<string>) => [
  anthropicEvent("message_start", {
    message: { ...anthropicMessage([], ""), stop_reason: null, usage: { input_tokens: 5, output_tokens: 0 } }
  }),
  anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
  ...pieces.map((text) => anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text } })),
  anthropicEvent("content_block_stop", { index: 0 }),
  anthropicEvent("message_delta", {
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { output_tokens: 3 }
  }),
  anthropicEvent("message_stop", {})
]

/** An Anthropic answer naming the model asked for, streamed when asked. */
const anthropicAnswer = (request: RecordedRequest): Reply => {
  const model = String(request.body?.["model"])
  return request.body?.["stream"] === true
    ? { kind: "sse", frames: anthropicStream(["from ", model]) }
    : {
        kind: "json",
        status: 200,
        body: { ...anthropicMessage([{ type: "text", text: `from ${model}` }]), model }
      }
}

/** Answers every model, but those `failing` says fail with the reply it gives. */
const serving =
  (answer: (request: RecordedRequest) => Reply, failing: (model: string) => Reply | undefined = () => undefined) =>
  (request: RecordedRequest): Reply =>
    failing(String(request.body?.["model"])) ?? answer(request)

const ROUTES_YAML = (light: string) => `# routes the tests use
routes:
  # OpenAI down, Anthropic serves.
  - model: claude-fallback
    targets:
      - provider: openai
        model: gpt-down
        retries: 0
      - provider: anthropic
        model: claude-up
  - model: claude-fallback-stream
    targets:
      - provider: openai
        model: gpt-down
        retries: 0
      - provider: anthropic
        model: claude-up
  # Anthropic down, OpenAI serves.
  - model: gpt-fallback
    targets:
      - provider: anthropic
        model: claude-down
        retries: 0
      - provider: openai
        model: gpt-up
  - model: shared
    targets:
      - provider: openai
        model: gpt-heavy
        weight: 3
        order: 0
      - provider: openai
        model: gpt-light
        baseUrl: ${light}
        weight: 1
        order: 0
  - model: breaker
    targets:
      - provider: openai
        model: gpt-flaky
        retries: 0
      - provider: anthropic
        model: claude-steady
  - model: messages-route
    targets:
      - provider: openai
        model: gpt-for-messages
      - provider: anthropic
        model: claude-for-messages
  # A key or model refused: the next target, without retries.
  - model: refused
    targets:
      - provider: openai
        model: gpt-refused
      - provider: anthropic
        model: claude-up
  # A request the provider finds wrong: back to the client.
  - model: strict
    targets:
      - provider: openai
        model: gpt-strict
      - provider: anthropic
        model: claude-up
  - model: slow
    targets:
      - provider: openai
        model: gpt-slow
        timeoutMs: 300
        retries: 0
      - provider: anthropic
        model: claude-up
  - model: own-key
    targets:
      - provider: anthropic
        model: claude-own-key
        apiKeyEnv: ROUTED_ANTHROPIC_KEY
`

let dir: string
let gw: TestGateway
let oa: FakeUpstream
let oa2: FakeUpstream
let an: FakeUpstream
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "routes-"))
  ;[oa, oa2, an] = await Promise.all([startFakeUpstream(), startFakeUpstream(), startFakeUpstream()])
  const file = join(dir, "routes.yaml")
  await writeFile(file, ROUTES_YAML(oa2.url))
  gw = await startGateway({
    UPSTREAM_BASE_URL: oa.url,
    UPSTREAM_API_KEY: OPENAI_KEY,
    ANTHROPIC_BASE_URL: an.url,
    ANTHROPIC_API_KEY: ANTHROPIC_KEY,
    ROUTES_FILE: file,
    UPSTREAM_RETRIES: "2",
    UPSTREAM_RETRY_BASE_MS: "5",
    UPSTREAM_RETRY_MAX_MS: "2000",
    UPSTREAM_BREAKER_FAILURES: "2",
    UPSTREAM_BREAKER_COOLDOWN_MS: "600000",
    // The context goes to the operator's instructions: Anthropic's `system`.
    INJECTION_PLACEMENT: "system",
    ROUTED_ANTHROPIC_KEY: ROUTED_KEY
  })
})
afterAll(async () => {
  await gw?.close()
  await Promise.all([oa?.close(), oa2?.close(), an?.close()])
  await rm(dir, { recursive: true, force: true })
})
beforeEach(() => {
  for (const up of [oa, oa2, an]) up.reset()
})

describe("retries before the first byte (a direct request)", () => {
  it.each([
    ["two 500s", [openaiError(500), openaiError(500)]],
    ["a 429 with Retry-After: 0", [openaiError(429, { "retry-after": "0" })]],
    ["a connection reset before the answer", [{ kind: "reset" } as const]]
  ])("recovers from %s: the client gets 200 and one turn is recorded", async (_, failures) => {
    const user = `retry-${failures.length}-${failures[0]!.kind}-${"status" in failures[0]! ? failures[0].status : 0}`
    oa.enqueue(...failures)
    const { data, response } = await chat(gw, user, "gpt-test")
    expect(response.status).toBe(200)
    expect(data.choices[0]!.message.content).toBe("answer 0")
    expect(oa.requests).toHaveLength(failures.length + 1)
    expect(response.headers.get("x-service-upstream")).toBe("openai")
    expect(upstreamOf(response.headers)).toEqual({ target: "openai", attempts: failures.length + 1 })
    expect(await messagesOf(gw, user)).toEqual(["user", "assistant"])
  })

  it("counts the attempts and the retries in the metrics", async () => {
    const before = await scrape(gw)
    const direct = { route: "direct", target: "openai" }
    oa.enqueue(openaiError(503), openaiError(429, { "retry-after": "0" }))
    await chat(gw, "retry-metrics", "gpt-test")
    const after = await scrape(gw)
    const delta = (name: string, labels: Record<string, string>) =>
      sampleOf(after, name, labels) - sampleOf(before, name, labels)
    expect(delta("gateway_upstream_retries_total", direct)).toBe(2)
    expect(delta("gateway_upstream_attempts_total", { ...direct, outcome: "server_error" })).toBe(1)
    expect(delta("gateway_upstream_attempts_total", { ...direct, outcome: "rate_limited" })).toBe(1)
    expect(delta("gateway_upstream_attempts_total", { ...direct, outcome: "answered" })).toBe(1)
  })

  it("retries a stream whose first attempt failed before its first byte", async () => {
    oa.enqueue(openaiError(502), { kind: "sse", frames: chunkFrames(["re", "tried"]) })
    const { data: stream, response } = await openaiClient(gw, "retry-stream")
      .chat.completions.create({ model: "gpt-test", stream: true, messages: [{ role: "user", content: "hi" }] })
      .withResponse()
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toBe("retried")
    expect(oa.requests).toHaveLength(2)
    expect(upstreamOf(response.headers)).toEqual({ target: "openai", attempts: 2 })
    expect(await messagesOf(gw, "retry-stream")).toEqual(["user", "assistant"])
  })

  it("does not retry a 400: the client gets it at once", async () => {
    oa.enqueue({
      kind: "json",
      status: 400,
      body: { error: { message: "bad temperature", type: "invalid_request_error", code: null, param: "temperature" } }
    })
    const error = await chat(gw, "retry-400", "gpt-test").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect(error).toMatchObject({ status: 400 })
    expect(oa.requests).toHaveLength(1)
    expect(await messagesOf(gw, "retry-400")).toEqual([])
  })

  it("gives the client the last error, with its status, after UPSTREAM_RETRIES retries", async () => {
    oa.enqueue(openaiError(500), openaiError(502), openaiError(503))
    const error = await chat(gw, "retry-exhausted", "gpt-test").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.APIError)
    expect(error).toMatchObject({ status: 503 })
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toContain("scripted 503")
    expect(oa.requests).toHaveLength(3)
    expect(await messagesOf(gw, "retry-exhausted")).toEqual([])
  })

  it("waits as long as Retry-After asks", async () => {
    const arrivals: Array<number> = []
    oa.handler = (request) => {
      arrivals.push(Date.now())
      return arrivals.length === 1 ? openaiError(429, { "retry-after": "1" }) : openaiAnswer(request)
    }
    const { response } = await chat(gw, "retry-after", "gpt-test")
    expect(response.status).toBe(200)
    expect(arrivals).toHaveLength(2)
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(950)
    expect(upstreamOf(response.headers).attempts).toBe(2)
  })

  it("does not wait for a Retry-After longer than UPSTREAM_RETRY_MAX_MS: the client gets the 429", async () => {
    oa.enqueue(openaiError(429, { "retry-after": "30" }))
    const started = Date.now()
    const error = await chat(gw, "retry-after-long", "gpt-test").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get("retry-after")).toBe("30")
    expect(oa.requests).toHaveLength(1)
    expect(Date.now() - started).toBeLessThan(10_000)
  })

  it("asks again for a whole answer whose body broke off while the gateway read it: no byte had reached the client", async () => {
    oa.enqueue({
      kind: "sse",
      headers: { "content-type": "application/json" },
      frames: ['{"id":"chatcmpl-cut","object":"chat.completion","choices":[{"index":0,'],
      then: "destroy"
    })
    const { data } = await chat(gw, "retry-cut-body", "gpt-test")
    expect(data.object).toBe("chat.completion")
    expect(oa.requests).toHaveLength(2)
    expect(await messagesOf(gw, "retry-cut-body")).toEqual(["user", "assistant"])
  })

  it("never retries after the first byte: a stream cut short ends with an error and no turn", async () => {
    oa.enqueue({ kind: "sse", frames: chunkFrames(["one", "two", "three"]).slice(0, 3), then: "destroy" })
    const stream = await openaiClient(gw, "retry-cut").chat.completions.create({
      model: "gpt-test",
      stream: true,
      messages: [{ role: "user", content: "hi" }]
    })
    const seen: Array<string> = []
    const error = await (async () => {
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? "")
    })().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.APIError)
    expect(seen).toEqual(["", "one", "two"])
    // A request after it reaches the provider as its second: nothing was sent again in between.
    await chat(gw, "retry-cut-after", "gpt-test")
    expect(oa.requests).toHaveLength(2)
    expect(oa.requests[1]!.body?.["messages"]).toEqual([{ role: "user", content: "hi" }])
    expect(await messagesOf(gw, "retry-cut-after")).toEqual(["user", "assistant"])
    // Kept as far as it went, marked incomplete (never extracted).
    expect(
      await gw.query(
        "SELECT m.role, m.incomplete FROM messages m JOIN profiles p ON p.id = m.profile_id WHERE p.external_id = $1 ORDER BY m.created_at, m.id",
        ["retry-cut"]
      )
    ).toEqual([
      { role: "user", incomplete: true },
      { role: "assistant", incomplete: true }
    ])
  })
})

/** A profile with something to inject: its name. */
const knownUser = async (externalId: string, name: string) => {
  expect([200, 201]).toContain((await gw.request("POST", "/api/profiles", { json: { externalId } })).status)
  expect((await gw.request("PUT", `/api/profiles/${externalId}/traits/name`, { json: { value: name } })).status).toBe(
    200
  )
}

describe("a routed model", () => {
  it("falls back from OpenAI to Anthropic, with the user's memory in Anthropic's system", async () => {
    await knownUser("fallback-user", "Noor")
    oa.handler = serving(openaiAnswer, (model) => (model === "gpt-down" ? openaiError(500) : undefined))
    an.handler = serving(anthropicAnswer)
    const { data, response } = await chat(gw, "fallback-user", "claude-fallback", "who am I?")
    expect(data.choices[0]!.message.content).toBe("from claude-up")
    expect(response.headers.get("x-service-upstream")).toBe("anthropic/claude-up")
    expect(upstreamOf(response.headers)).toEqual({
      target: "anthropic/claude-up",
      attempts: 2,
      route: "claude-fallback",
      fallbacks: 1
    })
    // Each target was asked for its own model, with the context.
    expect(oa.requests).toHaveLength(1)
    expect(oa.requests[0]!.body).toMatchObject({ model: "gpt-down" })
    expect(JSON.stringify(oa.requests[0]!.body)).toContain("Noor")
    expect(an.requests).toHaveLength(1)
    const sent = an.requests[0]!
    expect(sent.path).toBe("/v1/messages")
    expect(sent.headers["x-api-key"]).toBe(ANTHROPIC_KEY)
    expect(sent.body).toMatchObject({ model: "claude-up", messages: [{ role: "user" }] })
    expect(String(sent.body!["system"])).toContain("- Name: Noor")
    expect(await messagesOf(gw, "fallback-user")).toEqual(["user", "assistant"])
  })

  it("falls back from OpenAI to Anthropic for a stream", async () => {
    await knownUser("fallback-stream-user", "Ines")
    oa.handler = serving(openaiAnswer, (model) => (model === "gpt-down" ? openaiError(503) : undefined))
    an.handler = serving(anthropicAnswer)
    const { data: stream, response } = await openaiClient(gw, "fallback-stream-user")
      .chat.completions.create({
        model: "claude-fallback-stream",
        stream: true,
        messages: [{ role: "user", content: "stream please" }]
      })
      .withResponse()
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toBe("from claude-up")
    expect(response.headers.get("x-service-upstream")).toBe("anthropic/claude-up")
    expect(upstreamOf(response.headers)).toMatchObject({ target: "anthropic/claude-up", attempts: 2, fallbacks: 1 })
    expect(asking(oa, "gpt-down")).toHaveLength(1)
    expect(an.requests).toHaveLength(1)
    expect(an.requests[0]!.body).toMatchObject({ model: "claude-up", stream: true })
    expect(String(an.requests[0]!.body!["system"])).toContain("- Name: Ines")
    expect(await messagesOf(gw, "fallback-stream-user")).toEqual(["user", "assistant"])
  })

  it("falls back from Anthropic to OpenAI for a chat completion", async () => {
    an.handler = serving(anthropicAnswer, (model) => (model === "claude-down" ? { kind: "reset" } : undefined))
    oa.handler = serving(openaiAnswer)
    const { data, response } = await chat(gw, "fallback-to-gpt", "gpt-fallback")
    expect(data.choices[0]!.message.content).toBe("from gpt-up")
    expect(response.headers.get("x-service-upstream")).toBe("openai/gpt-up")
    expect(upstreamOf(response.headers)).toEqual({
      target: "openai/gpt-up",
      attempts: 2,
      route: "gpt-fallback",
      fallbacks: 1
    })
    expect(an.requests.map((r) => r.body?.["model"])).toEqual(["claude-down"])
    expect(oa.requests).toHaveLength(1)
    expect(oa.requests[0]!.path).toBe("/v1/chat/completions")
    expect(oa.requests[0]!.headers["authorization"]).toBe(`Bearer ${OPENAI_KEY}`)
    expect(oa.requests[0]!.body).toMatchObject({ model: "gpt-up", messages: [{ role: "user", content: "hi" }] })
    expect(await messagesOf(gw, "fallback-to-gpt")).toEqual(["user", "assistant"])
  })

  it("shares the load of targets of equal order by weight", async () => {
    oa.handler = serving(openaiAnswer)
    oa2.handler = serving(openaiAnswer)
    const total = 200
    const served = new Map<string, number>()
    let next = 0
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < total) {
          next++
          const { response } = await chat(gw, "weights-user", "shared")
          const target = response.headers.get("x-service-upstream") ?? "none"
          served.set(target, (served.get(target) ?? 0) + 1)
        }
      })
    )
    expect(asking(oa, "gpt-heavy").length + asking(oa2, "gpt-light").length).toBe(total)
    expect(oa.requests.every((r) => r.body?.["model"] === "gpt-heavy")).toBe(true)
    expect(oa2.requests.every((r) => r.body?.["model"] === "gpt-light" && r.path === "/v1/chat/completions")).toBe(true)
    // Expected 150 (3/4 of 200), standard deviation about 6.
    expect(asking(oa, "gpt-heavy").length).toBeGreaterThanOrEqual(120)
    expect(asking(oa, "gpt-heavy").length).toBeLessThanOrEqual(180)
    expect(served.get("openai/gpt-heavy")).toBe(asking(oa, "gpt-heavy").length)
    expect(served.get("openai/gpt-light")).toBe(asking(oa2, "gpt-light").length)
  })

  it("opens a target's breaker after UPSTREAM_BREAKER_FAILURES failures: requests go straight to the next", async () => {
    oa.handler = serving(openaiAnswer, (model) => (model === "gpt-flaky" ? openaiError(500) : undefined))
    an.handler = serving(anthropicAnswer)
    expect(breakerOf(await routesView(gw), "breaker", "openai/gpt-flaky")).toBe("closed")
    for (let i = 0; i < 2; i++) {
      const { response } = await chat(gw, "breaker-user", "breaker")
      expect(upstreamOf(response.headers)).toMatchObject({ target: "anthropic/claude-steady", attempts: 2 })
    }
    expect(asking(oa, "gpt-flaky")).toHaveLength(2)
    for (let i = 0; i < 3; i++) {
      const { data, response } = await chat(gw, "breaker-user", "breaker")
      expect(data.choices[0]!.message.content).toBe("from claude-steady")
      expect(upstreamOf(response.headers)).toEqual({
        target: "anthropic/claude-steady",
        attempts: 1,
        route: "breaker",
        fallbacks: 1
      })
    }
    expect(asking(oa, "gpt-flaky")).toHaveLength(2)
    expect(asking(an, "claude-steady")).toHaveLength(5)
    const view = await routesView(gw)
    expect(breakerOf(view, "breaker", "openai/gpt-flaky")).toBe("open")
    expect(breakerOf(view, "breaker", "anthropic/claude-steady")).toBe("closed")
    const samples = await scrape(gw)
    const flaky = { route: "breaker", target: "openai/gpt-flaky" }
    expect(sampleOf(samples, "gateway_route_breaker_open", flaky)).toBe(1)
    expect(
      sampleOf(samples, "gateway_route_breaker_open", { route: "breaker", target: "anthropic/claude-steady" })
    ).toBe(0)
    expect(sampleOf(samples, "gateway_route_fallbacks_total", flaky)).toBe(5)
    expect(sampleOf(samples, "gateway_upstream_attempts_total", { ...flaky, outcome: "server_error" })).toBe(2)
    // The file read again (unchanged): the target keeps its breaker.
    const reloaded = await gw.request<RoutesViewJson>("POST", "/api/routes/reload")
    expect(reloaded.status).toBe(200)
    expect(breakerOf(reloaded.body, "breaker", "openai/gpt-flaky")).toBe("open")
    await chat(gw, "breaker-user", "breaker")
    expect(asking(oa, "gpt-flaky")).toHaveLength(2)
  })

  it("sends a Messages API request only to the route's Anthropic targets", async () => {
    oa.handler = serving(openaiAnswer)
    an.handler = serving(anthropicAnswer)
    const client = new Anthropic({
      baseURL: gw.baseUrl,
      apiKey: "unused",
      maxRetries: 0,
      defaultHeaders: { "X-Service-Id": "messages-routed" }
    })
    const { data, response } = await client.messages
      .create({ model: "messages-route", max_tokens: 100, messages: [{ role: "user", content: "hello" }] })
      .withResponse()
    expect(data.content).toEqual([{ type: "text", text: "from claude-for-messages" }])
    expect(response.headers.get("x-service-upstream")).toBe("anthropic/claude-for-messages")
    expect(upstreamOf(response.headers)).toEqual({
      target: "anthropic/claude-for-messages",
      attempts: 1,
      route: "messages-route",
      fallbacks: 0
    })
    expect(an.requests).toHaveLength(1)
    expect(an.requests[0]!.body).toMatchObject({ model: "claude-for-messages" })
    expect(oa.requests).toHaveLength(0)
    expect(await messagesOf(gw, "messages-routed")).toEqual(["user", "assistant"])
  })

  it("goes to the next target without retries when a target refuses the key or model (401)", async () => {
    oa.handler = serving(openaiAnswer, (model) =>
      model === "gpt-refused"
        ? {
            kind: "json",
            status: 401,
            body: { error: { message: "bad key", type: "invalid_request_error", code: "invalid_api_key", param: null } }
          }
        : undefined
    )
    an.handler = serving(anthropicAnswer)
    const { response } = await chat(gw, "refused-user", "refused")
    expect(upstreamOf(response.headers)).toEqual({
      target: "anthropic/claude-up",
      attempts: 2,
      route: "refused",
      fallbacks: 1
    })
    expect(asking(oa, "gpt-refused")).toHaveLength(1)
  })

  it("gives the client a request the first target found wrong (400), without asking the next", async () => {
    oa.handler = serving(openaiAnswer, (model) =>
      model === "gpt-strict"
        ? {
            kind: "json",
            status: 400,
            body: { error: { message: "bad request", type: "invalid_request_error", code: null, param: null } }
          }
        : undefined
    )
    an.handler = serving(anthropicAnswer)
    const error = await chat(gw, "strict-user", "strict").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect(asking(oa, "gpt-strict")).toHaveLength(1)
    expect(an.requests).toHaveLength(0)
    expect(await messagesOf(gw, "strict-user")).toEqual([])
  })

  it("gives up on a target that does not answer within its timeoutMs, for the next", async () => {
    oa.handler = serving(openaiAnswer, (model) => (model === "gpt-slow" ? { kind: "hang" } : undefined))
    an.handler = serving(anthropicAnswer)
    const started = Date.now()
    const { data, response } = await chat(gw, "slow-user", "slow")
    expect(data.choices[0]!.message.content).toBe("from claude-up")
    expect(upstreamOf(response.headers)).toMatchObject({ target: "anthropic/claude-up", attempts: 2, fallbacks: 1 })
    expect(asking(oa, "gpt-slow")).toHaveLength(1)
    // The target's 300 ms, not the gateway's first-byte timeout.
    expect(Date.now() - started).toBeLessThan(10_000)
    const samples = await scrape(gw)
    expect(
      sampleOf(samples, "gateway_upstream_attempts_total", {
        route: "slow",
        target: "openai/gpt-slow",
        outcome: "timeout"
      })
    ).toBe(1)
  })

  it("calls a target with the key its apiKeyEnv names", async () => {
    an.handler = serving(anthropicAnswer)
    const { response } = await chat(gw, "own-key-user", "own-key")
    expect(response.headers.get("x-service-upstream")).toBe("anthropic/claude-own-key")
    expect(an.requests[0]!.headers["x-api-key"]).toBe(ROUTED_KEY)
    expect(an.requests[0]!.body).toMatchObject({ model: "claude-own-key" })
  })

  it("lists the routes and their targets on /api/routes", async () => {
    const view = await routesView(gw)
    expect(view.file).toBe(join(dir, "routes.yaml"))
    expect(view.retries).toBe(2)
    expect(view.routes.map((route) => route.model)).toEqual([
      "claude-fallback",
      "claude-fallback-stream",
      "gpt-fallback",
      "shared",
      "breaker",
      "messages-route",
      "refused",
      "strict",
      "slow",
      "own-key"
    ])
    expect(view.routes.find((route) => route.model === "own-key")!.targets[0]).toMatchObject({
      apiKeyEnv: "ROUTED_ANTHROPIC_KEY",
      keyId: null,
      baseUrl: an.url
    })
    expect(JSON.stringify(view)).not.toContain(ROUTED_KEY)
    expect(view.routes.find((route) => route.model === "slow")!.targets[0]).toMatchObject({
      timeoutMs: 300,
      retries: 0
    })
    expect(view.routes.find((route) => route.model === "shared")!.targets).toEqual([
      {
        target: "openai/gpt-heavy",
        provider: "openai",
        model: "gpt-heavy",
        baseUrl: oa.url,
        apiKeyEnv: null,
        keyId: null,
        order: 0,
        weight: 3,
        timeoutMs: null,
        retries: 2,
        breaker: "closed"
      },
      {
        target: "openai/gpt-light",
        provider: "openai",
        model: "gpt-light",
        baseUrl: oa2.url,
        apiKeyEnv: null,
        keyId: null,
        order: 0,
        weight: 1,
        timeoutMs: null,
        retries: 2,
        breaker: "closed"
      }
    ])
  })
})

describe("a routes file that changes", () => {
  const routesJson = (models: ReadonlyArray<string>) =>
    JSON.stringify(
      {
        routes: [
          {
            model: "probe",
            targets: [
              { provider: "openai", model: "gpt-recovering", retries: 0 },
              { provider: "anthropic", model: "claude-steady" }
            ]
          },
          {
            model: "carry",
            targets: [
              { provider: "anthropic", model: "claude-carry", retries: 0 },
              { provider: "openai", model: "gpt-carry" }
            ]
          },
          ...models.map((model) => ({ model, targets: [{ provider: "openai", model: `gpt-${model}` }] }))
        ]
      },
      null,
      2
    )

  let file: string
  let quick: TestGateway
  beforeAll(async () => {
    file = join(dir, "routes.json")
    await writeFile(file, routesJson([]))
    quick = await startGateway({
      UPSTREAM_BASE_URL: oa.url,
      UPSTREAM_API_KEY: OPENAI_KEY,
      ANTHROPIC_BASE_URL: an.url,
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      ROUTES_FILE: file,
      UPSTREAM_RETRIES: "5",
      UPSTREAM_RETRY_BASE_MS: "5",
      UPSTREAM_RETRY_WITHIN_MS: "300",
      UPSTREAM_BREAKER_FAILURES: "2",
      UPSTREAM_BREAKER_COOLDOWN_MS: "300"
    })
  })
  afterAll(async () => {
    await quick?.close()
  })

  it("starts no retry UPSTREAM_RETRY_WITHIN_MS after the first attempt", async () => {
    // Each failure takes 200 ms: the second attempt ends past the 300 ms (five retries would be allowed otherwise).
    for (let i = 0; i < 6; i++) oa.enqueue({ ...openaiError(500), delayMs: 200 })
    const error = await chat(quick, "within-user", "gpt-test").catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 500 })
    expect(oa.requests.length).toBeGreaterThanOrEqual(1)
    expect(oa.requests.length).toBeLessThanOrEqual(2)
  })

  it("probes a target after the cooldown, and closes its breaker when it answers", async () => {
    let down = true
    oa.handler = serving(openaiAnswer, (model) => (down && model === "gpt-recovering" ? openaiError(500) : undefined))
    an.handler = serving(anthropicAnswer)
    for (let i = 0; i < 2; i++) {
      const { response } = await chat(quick, "probe-user", "probe")
      expect(upstreamOf(response.headers)).toMatchObject({ target: "anthropic/claude-steady", fallbacks: 1 })
    }
    const target = { route: "probe", target: "openai/gpt-recovering" }
    expect(sampleOf(await scrape(quick), "gateway_route_breaker_open", target)).toBe(1)
    expect(["open", "half_open"]).toContain(breakerOf(await routesView(quick), "probe", "openai/gpt-recovering"))

    down = false
    const probed = await eventually(async () => {
      const { response } = await chat(quick, "probe-user", "probe")
      return response.headers.get("x-service-upstream") === "openai/gpt-recovering" ? response : undefined
    }, 10_000)
    expect(upstreamOf(probed.headers)).toEqual({
      target: "openai/gpt-recovering",
      attempts: 1,
      route: "probe",
      fallbacks: 0
    })
    expect(breakerOf(await routesView(quick), "probe", "openai/gpt-recovering")).toBe("closed")
    expect(sampleOf(await scrape(quick), "gateway_route_breaker_open", target)).toBe(0)
    const { response } = await chat(quick, "probe-user", "probe")
    expect(response.headers.get("x-service-upstream")).toBe("openai/gpt-recovering")
  })

  it("probes again after a probe request the target could not carry", async () => {
    let down = true
    an.handler = serving(anthropicAnswer, (model) =>
      down && model === "claude-carry"
        ? { kind: "json", status: 529, body: { type: "error", error: { type: "overloaded_error", message: "busy" } } }
        : undefined
    )
    oa.handler = serving(openaiAnswer)
    for (let i = 0; i < 2; i++) {
      const { response } = await chat(quick, "carry-user", "carry")
      expect(upstreamOf(response.headers)).toMatchObject({ target: "openai/gpt-carry", fallbacks: 1 })
    }
    down = false
    await eventually(async () =>
      breakerOf(await routesView(quick), "carry", "anthropic/claude-carry") === "half_open" ? true : undefined
    )
    // The first request after the cooldown is one Anthropic cannot take (n > 1): the next target serves it.
    const { data, response } = await openaiClient(quick, "carry-user")
      .chat.completions.create({ model: "carry", n: 2, messages: [{ role: "user", content: "two answers" }] })
      .withResponse()
    expect(data.choices[0]!.message.content).toBe("from gpt-carry")
    expect(response.headers.get("x-service-upstream")).toBe("openai/gpt-carry")
    expect(asking(an, "claude-carry")).toHaveLength(2)
    // Anthropic was never asked: a later request probes it, and it closes.
    const probed = await eventually(async () => {
      const { response } = await chat(quick, "carry-user", "carry")
      return response.headers.get("x-service-upstream") === "anthropic/claude-carry" ? response : undefined
    }, 3000).catch(() => undefined)
    expect(breakerOf(await routesView(quick), "carry", "anthropic/claude-carry")).toBe("closed")
    expect(asking(an, "claude-carry")).toHaveLength(3)
    expect(upstreamOf(probed!.headers)).toMatchObject({ attempts: 1, fallbacks: 0 })
  })

  it("picks up a changed file, and keeps the routes it has when the file turns bad", async () => {
    oa.handler = serving(openaiAnswer)
    await replaceFile(file, routesJson(["added"]))
    await eventually(async () => {
      const view = await routesView(quick)
      return view.routes.some((route) => route.model === "added") ? true : undefined
    }, 10_000)
    const { data, response } = await chat(quick, "reload-user", "added")
    expect(data.choices[0]!.message.content).toBe("from gpt-added")
    expect(response.headers.get("x-service-upstream")).toBe("openai/gpt-added")

    // An unknown field (a misspelt one).
    const bad = routesJson(["added", "later"]).replace('"model": "gpt-recovering"', '"modle": "gpt-recovering"')
    const line = bad.split("\n").findIndex((text) => text.includes('"modle"')) + 1
    expect(line).toBeGreaterThan(1)
    await replaceFile(file, bad)
    const reload = await quick.request("POST", "/api/routes/reload")
    const message = expectError(reload, 400, "invalid_routes_file")
    expect(message).toMatch(new RegExp(`line ${line}\\b`))
    expect(message).toContain(file)

    const view = await routesView(quick)
    expect(view.routes.map((route) => route.model)).toEqual(["probe", "carry", "added"])
    const again = await chat(quick, "reload-user", "added")
    expect(again.response.headers.get("x-service-upstream")).toBe("openai/gpt-added")
    expect(asking(oa, "gpt-added")).toHaveLength(2)

    // Put right, the reload answers with the new routes.
    await replaceFile(file, routesJson(["added", "later"]))
    const fixed = await quick.request<RoutesViewJson>("POST", "/api/routes/reload")
    expect(fixed.status).toBe(200)
    expect(fixed.body.routes.map((route) => route.model)).toEqual(["probe", "carry", "added", "later"])
  })
})

describe("a bad routes file at start", () => {
  it("stops the gateway from starting, naming the line", async () => {
    const file = join(dir, "bad.yaml")
    await writeFile(
      file,
      [
        "routes:",
        "  - model: smart",
        "    targets:",
        "      - provider: openai",
        "        model: gpt",
        "        weight: -1",
        ""
      ].join("\n")
    )
    await expect(
      startGateway({ UPSTREAM_BASE_URL: oa.url, UPSTREAM_API_KEY: OPENAI_KEY, ROUTES_FILE: file })
    ).rejects.toThrow(/line 6\b/)
  })

  it("stops the gateway from starting when a target's apiKeyEnv is not set, naming the line", async () => {
    const file = join(dir, "unset-key.json")
    await writeFile(
      file,
      JSON.stringify(
        { routes: [{ model: "m", targets: [{ provider: "openai", model: "gpt", apiKeyEnv: "NOT_SET_ANYWHERE" }] }] },
        null,
        2
      )
    )
    await expect(
      startGateway({ UPSTREAM_BASE_URL: oa.url, UPSTREAM_API_KEY: OPENAI_KEY, ROUTES_FILE: file })
    ).rejects.toThrow(/line 9\b.*NOT_SET_ANYWHERE/)
  })
})
