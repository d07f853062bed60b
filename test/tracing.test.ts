import { randomBytes } from "node:crypto"
import { ConfigProvider, Deferred, Effect, Fiber, Layer, Option, Redacted, Stream } from "effect"
import type { HttpServerResponse } from "effect/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { appConfigFromEnv } from "../src/app/AppConfig.ts"
import { TracingLive } from "../src/observability/Tracing.ts"
import { TracingConfig, tracingFromEnv } from "../src/observability/TracingConfig.ts"
import { makeChunkReader } from "../src/providers/openai/stream.ts"
import { Upstream } from "../src/upstream/Upstream.ts"
import { UpstreamConfig, upstreamFromEnv } from "../src/upstream/UpstreamConfig.ts"
import { UpstreamHttp } from "../src/upstream/UpstreamHttp.ts"
import { anthropicEvent, anthropicMessage } from "./support/anthropicWire.ts"
import { type FakeCollector, type ReceivedSpan, startFakeCollector } from "./support/fakeCollector.ts"
import { chunkFrames, eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { streamedRequest } from "./support/streamedRequest.ts"

const SERVICE_KEY = "sk-service-tracing"

/** A caller's W3C trace context: a fresh trace id and the caller's own span id. */
const callerContext = () => {
  const traceId = randomBytes(16).toString("hex")
  const spanId = randomBytes(8).toString("hex")
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` }
}

const W3C_TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/

const chat = (gw: TestGateway, traceparent: string) =>
  gw.request("POST", "/v1/chat/completions", {
    json: { model: "gpt-test", messages: [{ role: "user", content: "hello" }] },
    headers: { authorization: `Bearer ${SERVICE_KEY}`, "x-service-id": "traced-user", traceparent }
  })

/** A request with the service key, in a trace of its own: its id, to find its spans. */
const traced = async (
  gw: TestGateway,
  method: string,
  path: string,
  json?: unknown,
  headers: Record<string, string> = {}
) => {
  const caller = callerContext()
  const response = await gw.request(method, path, {
    ...(json === undefined ? {} : { json }),
    headers: {
      authorization: `Bearer ${SERVICE_KEY}`,
      "x-service-id": "traced-user",
      traceparent: caller.traceparent,
      ...headers
    }
  })
  return { response, traceId: caller.traceId }
}

/** A Responses API answer, with the usage OpenAI reports. */
const responseObject = (status = "completed") => ({
  id: "resp_traced",
  object: "response",
  created_at: 1_700_000_000,
  status,
  model: "gpt-test-2025",
  output:
    status === "completed"
      ? [
          {
            type: "message",
            id: "msg_1",
            status: "completed",
            role: "assistant",
            content: [{ type: "output_text", text: "hi", annotations: [] }]
          }
        ]
      : [],
  usage: { input_tokens: 10, output_tokens: 3, total_tokens: 13 }
})

const responsesEvent = (type: string, response: unknown) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, response })}\n\n`

/**
 * An Anthropic stream: its input tokens come with `message_start` (21 in all: 5 after the cache
 * breakpoint, 12 read from the cache, 4 written to it), its output tokens with `message_delta`.
 */
const anthropicFrames = [
  anthropicEvent("message_start", {
    message: {
      ...anthropicMessage([], ""),
      stop_reason: null,
      usage: { input_tokens: 5, cache_read_input_tokens: 12, cache_creation_input_tokens: 4, output_tokens: 1 }
    }
  }),
  anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
  anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hello" } }),
  anthropicEvent("content_block_stop", { index: 0 }),
  anthropicEvent("message_delta", {
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { output_tokens: 4 }
  }),
  anthropicEvent("message_stop", {})
]

/** OTLP's span kinds. */
const SERVER = 2
const CLIENT = 3

describe("span export over OTLP/HTTP (JSON)", () => {
  let collector: FakeCollector
  let up: FakeUpstream
  let gw: TestGateway
  /** The span of this trace that `test` picks, once it has been exported. */
  const spanIn = (traceId: string, test: (span: ReceivedSpan) => boolean) =>
    eventually(async () => collector.spans().find((span) => span.traceId === traceId && test(span)))
  beforeAll(async () => {
    collector = await startFakeCollector()
    up = await startFakeUpstream()
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-test-default-upstream",
      ANTHROPIC_BASE_URL: up.url,
      ANTHROPIC_API_KEY: "sk-ant-test",
      SERVICE_API_KEY: SERVICE_KEY,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_HEADERS: "x-collector-key=secret%20value,x-tenant=acme",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-tenant=tracing",
      OTEL_SERVICE_NAME: "gateway-under-test",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test,service.name=overridden",
      OTEL_BSP_SCHEDULE_DELAY: "20"
    })
  })
  afterAll(async () => {
    await gw.close()
    await up.close()
    await collector.close()
  })

  it("exports the request's server span in the caller's trace, with the configured endpoint, headers and resource", async () => {
    const caller = callerContext()
    expect((await chat(gw, caller.traceparent)).status).toBe(200)

    const server = await eventually(async () =>
      collector.spans().find((span) => span.traceId === caller.traceId && span.parentSpanId === caller.spanId)
    )
    // Named as OpenTelemetry's HTTP conventions say: `METHOD route`.
    expect(server.name).toBe("POST /v1/chat/completions")
    expect(server.kind).toBe(SERVER)
    expect(server.attributes["http.route"]).toBe("/v1/chat/completions")
    expect(server.attributes["http.request.method"]).toBe("POST")
    expect(server.attributes["http.response.status_code"]).toBe(200)
    expect(server.resource["service.name"]).toBe("gateway-under-test")
    expect(server.resource["deployment.environment"]).toBe("test")
    // The gateway's own spans hang below the server span, in the same trace: the completion, and its
    // stages in order beneath it, the provider call inside forward.
    const completion = await eventually(async () =>
      collector.spans().find((span) => span.traceId === caller.traceId && span.name === "Completion.complete")
    )
    const stages = [
      "pipeline.resolveUser",
      "pipeline.loadProfile",
      "pipeline.inject",
      "pipeline.forward",
      "pipeline.record"
    ]
    const stageSpans = await eventually(async () => {
      const found = stages.map((name) =>
        collector
          .spans()
          .find(
            (span) => span.traceId === caller.traceId && span.name === name && span.parentSpanId === completion.spanId
          )
      )
      return found.every((span) => span !== undefined) ? found : undefined
    })
    expect(stageSpans.map((span) => span!.name)).toEqual(stages)
    const forward = stageSpans[3]!
    // The provider call, named by the API it calls, with OpenTelemetry's GenAI attributes.
    const provider = collector
      .spans()
      .find((span) => span.name === "upstream chat.completions" && span.parentSpanId === forward.spanId)
    expect(provider?.kind).toBe(CLIENT)
    expect(provider?.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.system": "openai",
      "gen_ai.request.model": "gpt-test",
      "gen_ai.response.model": "gpt-test",
      "http.response.status_code": 200,
      "gen_ai.usage.input_tokens": 11,
      "gen_ai.usage.output_tokens": 7,
      "server.address": "127.0.0.1"
    })

    const [received] = collector.exports
    expect(received!.path).toBe("/v1/traces")
    expect(received!.headers["content-type"]).toContain("application/json")
    expect(received!.headers["x-collector-key"]).toBe("secret value")
    // The traces-only variable wins over the shared one, name by name.
    expect(received!.headers["x-tenant"]).toBe("tracing")
  })

  it("names a profile read by its route's template, never by the user id in its path", async () => {
    const { response, traceId } = await traced(gw, "GET", "/api/profiles/traced-user")
    expect(response.status).toBe(200)
    const server = await spanIn(traceId, (span) => span.kind === SERVER)
    const route = String(server.attributes["http.route"])
    expect(route).toMatch(/^\/api\/profiles\/:\w+$/)
    expect(server.name).toBe(`GET ${route}`)
    expect(server.name).not.toContain("traced-user")
    expect(server.attributes["http.response.status_code"]).toBe(200)
  })

  it("names a passed-through call `METHOD /v1/*`, with no query value in its attributes", async () => {
    const { response, traceId } = await traced(gw, "GET", "/v1/files?purpose=sk-query-secret")
    expect(response.status).toBe(200)
    const server = await spanIn(traceId, (span) => span.kind === SERVER)
    expect(server.name).toBe("GET /v1/*")
    expect(server.attributes["url.path"]).toBe("/v1/files")
    expect(JSON.stringify(server.attributes)).not.toContain("sk-query-secret")
    const provider = await spanIn(traceId, (span) => span.name === "upstream passthrough")
    expect(provider.attributes).toMatchObject({
      "gen_ai.provider.name": "openai",
      "http.request.method": "GET",
      "http.response.status_code": 200
    })
    expect(JSON.stringify(provider)).not.toContain("sk-query-secret")
  })

  it("names the provider span of a Responses call for that API, with the model, status and usage", async () => {
    up.enqueue({ kind: "json", status: 200, body: responseObject() })
    const { response, traceId } = await traced(gw, "POST", "/v1/responses", { model: "gpt-test", input: "hello" })
    expect(response.status).toBe(200)
    expect((await spanIn(traceId, (span) => span.kind === SERVER)).name).toBe("POST /v1/responses")
    const provider = await spanIn(traceId, (span) => span.name === "upstream responses")
    expect(provider.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-test",
      "gen_ai.response.model": "gpt-test-2025",
      "http.response.status_code": 200,
      "gen_ai.usage.input_tokens": 10,
      "gen_ai.usage.output_tokens": 3
    })
  })

  it("gives a streamed answer's provider span the usage its stream ends with", async () => {
    // Chat Completions: the usage chunk the client asked for.
    up.enqueue({ kind: "sse", frames: chunkFrames(["Hel", "lo"], { usage: true }) })
    const chatStream = await traced(gw, "POST", "/v1/chat/completions", {
      model: "gpt-test",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "hello" }]
    })
    expect(chatStream.response.text).toContain("[DONE]")
    expect(
      (await spanIn(chatStream.traceId, (span) => span.name === "upstream chat.completions")).attributes
    ).toMatchObject({
      "gen_ai.response.model": "gpt-test",
      "http.response.status_code": 200,
      "gen_ai.usage.input_tokens": 5,
      "gen_ai.usage.output_tokens": 2
    })

    // Responses: the usage of the response its last event carries.
    up.enqueue({
      kind: "sse",
      frames: [
        responsesEvent("response.created", responseObject("in_progress")),
        responsesEvent("response.completed", responseObject())
      ]
    })
    const responsesStream = await traced(gw, "POST", "/v1/responses", {
      model: "gpt-test",
      input: "hello",
      stream: true
    })
    expect(responsesStream.response.text).toContain("response.completed")
    expect(
      (await spanIn(responsesStream.traceId, (span) => span.name === "upstream responses")).attributes
    ).toMatchObject({
      "gen_ai.response.model": "gpt-test-2025",
      "gen_ai.usage.input_tokens": 10,
      "gen_ai.usage.output_tokens": 3
    })

    // Anthropic, translated for a chat client that did not ask for the usage, and natively.
    up.enqueue({ kind: "sse", frames: anthropicFrames })
    const translated = await traced(
      gw,
      "POST",
      "/v1/chat/completions",
      { model: "claude-test", stream: true, messages: [{ role: "user", content: "hello" }] },
      { "x-upstream-provider": "anthropic" }
    )
    expect(translated.response.text).toContain('"content":"Hello"')
    expect(translated.response.text).not.toContain("prompt_tokens")
    up.enqueue({ kind: "sse", frames: anthropicFrames })
    const native = await traced(gw, "POST", "/v1/messages", {
      model: "claude-test",
      max_tokens: 100,
      stream: true,
      messages: [{ role: "user", content: "hello" }],
      metadata: { user_id: "traced-user" }
    })
    expect(native.response.text).toContain("message_stop")
    for (const { traceId } of [translated, native]) {
      expect((await spanIn(traceId, (span) => span.name === "upstream messages")).attributes).toMatchObject({
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-test",
        "gen_ai.response.model": "claude-test",
        "http.response.status_code": 200,
        "gen_ai.usage.input_tokens": 21,
        "gen_ai.usage.output_tokens": 4,
        "gen_ai.usage.cache_read.input_tokens": 12,
        "gen_ai.usage.cache_creation.input_tokens": 4
      })
    }
  })

  it("sends the provider a traceparent in the caller's trace", async () => {
    const caller = callerContext()
    up.reset()
    expect((await chat(gw, caller.traceparent)).status).toBe(200)
    const forwarded = up.requests.at(-1)?.headers["traceparent"]
    expect(forwarded).toMatch(W3C_TRACEPARENT)
    const [, traceId, spanId] = W3C_TRACEPARENT.exec(String(forwarded))!
    expect(traceId).toBe(caller.traceId)
    // A span of the gateway's, not the caller's: the provider's work shows under the gateway's.
    expect(spanId).not.toBe(caller.spanId)
  })
})

describe("a streamed answer's provider span", () => {
  /** A request (see `streamedRequest`) in the caller's trace, whose handler relays a Chat Completions stream. */
  const handled = (
    upstream: Upstream["Service"],
    traceparent: string,
    write: (response: HttpServerResponse.HttpServerResponse) => Effect.Effect<unknown>,
    respond: Effect.Effect<void> = Effect.void
  ) =>
    streamedRequest(
      upstream.relay(
        { provider: "openai", apiKey: Redacted.make("sk-test-default-upstream") },
        "/chat/completions",
        { model: "gpt-test", stream: true, messages: [{ role: "user", content: "hello" }] },
        { headers: {} },
        makeChunkReader
      ),
      write,
      { respond, headers: { traceparent } }
    )

  it("ends once, interrupted, with the request when its stream is never run: the client gone before the body, or the request interrupted after the call", async () => {
    const collector = await startFakeCollector()
    const up = await startFakeUpstream()
    try {
      const env = ConfigProvider.fromUnknown({
        UPSTREAM_BASE_URL: up.url,
        UPSTREAM_API_KEY: "sk-test-default-upstream",
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_BSP_SCHEDULE_DELAY: "20"
      })
      const services = Layer.merge(Upstream.layer.pipe(Layer.provideMerge(UpstreamHttp.layer)), TracingLive).pipe(
        Layer.provide(Layer.effect(UpstreamConfig, upstreamFromEnv.parse(env))),
        Layer.provide(Layer.effect(TracingConfig, tracingFromEnv.parse(env)))
      )
      const written = callerContext()
      const clientGone = callerContext()
      const interrupted = callerContext()
      await Effect.runPromise(
        Effect.gen(function* () {
          const upstream = yield* Upstream
          for (let i = 0; i < 3; i++) up.enqueue({ kind: "sse", frames: chunkFrames(["Hel", "lo"], { usage: true }) })
          // Written: the stream is run to its end.
          yield* handled(upstream, written.traceparent, (response) =>
            response.body._tag === "Stream" ? Effect.orDie(Stream.runDrain(response.body.stream)) : Effect.void
          )
          // The client went away before the body was written: Node's adapter then writes nothing and
          // leaves a stream body unrun (`writeResponse` on a destroyed response).
          yield* handled(upstream, clientGone.traceparent, () => Effect.void)
          // The request interrupted (client gone, shutdown) after the call returned, before its answer.
          const answered = yield* Deferred.make<void>()
          const request = yield* Effect.forkChild(
            handled(
              upstream,
              interrupted.traceparent,
              () => Effect.void,
              Deferred.succeed(answered, undefined).pipe(Effect.andThen(Effect.never))
            )
          )
          yield* Deferred.await(answered)
          yield* Fiber.interrupt(request)
          // Every span is waited for while the exporter runs (its shutdown would flush any late one).
          yield* Effect.promise(() =>
            Promise.all(
              [written, clientGone, interrupted].map(({ traceId }) =>
                eventually(async () =>
                  collector
                    .spans()
                    .find((span) => span.traceId === traceId && span.name === "upstream chat.completions")
                )
              )
            )
          )
        }).pipe(Effect.provide(services))
      )
      const providerSpans = (traceId: string) =>
        collector.spans().filter((span) => span.traceId === traceId && span.name === "upstream chat.completions")
      const [whole] = providerSpans(written.traceId)
      expect(whole?.attributes).toMatchObject({ "http.response.status_code": 200, "gen_ai.usage.output_tokens": 2 })
      expect(whole?.attributes["effect.fiber.interrupted"]).toBeUndefined()
      for (const { traceId } of [clientGone, interrupted]) {
        const spans = providerSpans(traceId)
        expect(spans).toHaveLength(1)
        // Cut short: no error of the provider's, which answered.
        expect(spans[0]!.attributes).toMatchObject({
          "http.response.status_code": 200,
          "effect.fiber.interrupted": true
        })
        expect(spans[0]!.attributes["error.type"]).toBeUndefined()
      }
    } finally {
      await up.close()
      await collector.close()
    }
  })
})

interface WorkerCounters {
  readonly loops: number
  readonly idlePolls: number
  readonly claimed: number
  readonly inFlight: number
}

describe("an idle gateway", () => {
  it("exports no span for its background loops' polls, and the spans of a turn that found work", async () => {
    const collector = await startFakeCollector()
    const up = await startFakeUpstream()
    const gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-test-default-upstream",
      SERVICE_API_KEY: SERVICE_KEY,
      // Two extraction loops and the webhook loops, each polling every 400 ms.
      EXTRACTION_CONCURRENCY: "2",
      EXTRACTION_POLL_MS: "400",
      // A retention sweep every 200 ms, with nothing old enough to delete.
      THREAD_RETENTION_DAYS: "30",
      THREAD_RETENTION_SWEEP_MS: "200",
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "20"
    })
    let closed = false
    try {
      const worker = async () =>
        (
          await gw.request<{ worker: WorkerCounters }>("GET", "/api/jobs", {
            headers: { authorization: `Bearer ${SERVICE_KEY}` }
          })
        ).body.worker
      const before = await worker()
      expect(before.loops).toBeGreaterThanOrEqual(3)
      // Each loop polled three times more, on average: past a second, so the check for changed keys ran too.
      const idle = await eventually(async () => {
        const now = await worker()
        return now.idlePolls >= before.idlePolls + 3 * before.loops ? now : undefined
      }, 15_000)
      expect(idle.claimed).toBe(0)

      // Then work: a turn's extraction job, claimed and run (the scripted model's answer fails it: a retry).
      const caller = callerContext()
      expect((await chat(gw, caller.traceparent)).status).toBe(200)
      await eventually(async () => {
        const now = await worker()
        return now.claimed >= 1 && now.inFlight === 0 ? now : undefined
      }, 15_000)
      // Shutdown sends every span still buffered.
      await gw.close()
      closed = true

      const spans = collector.spans()
      const requestTraces = new Set(spans.filter((span) => span.kind === SERVER).map((span) => span.traceId))
      const startOf = (span: ReceivedSpan) => BigInt(span.startTimeUnixNano)
      const serverSpanOf = (traceId: string) =>
        spans.find((span) => span.traceId === traceId && span.kind === SERVER && span.parentSpanId === undefined)
      // Between the first read of the counters and the chat: only those reads' own spans.
      const idleFrom = startOf(serverSpanOf([...requestTraces][0]!)!)
      const chatServer = spans.find((span) => span.traceId === caller.traceId && span.kind === SERVER)!
      const idleTo = startOf(chatServer)
      const duringIdle = spans.filter((span) => startOf(span) >= idleFrom && startOf(span) < idleTo)
      expect(duringIdle.length).toBeGreaterThan(0)
      expect(duringIdle.filter((span) => !requestTraces.has(span.traceId)).map((span) => span.name)).toEqual([])

      // The turn that found the job keeps its spans, in one trace: the job, its claim, its work.
      const job = spans.find((span) => span.name === "ExtractionWorker.job" && span.attributes["job.kind"] === "turn")
      expect(job?.parentSpanId).toBeUndefined()
      expect(job?.attributes["job.line"]).toBe("extract")
      const inJob = spans.filter((span) => span.traceId === job?.traceId)
      expect(inJob.some((span) => span.name === "JobQueue.claim" && span.parentSpanId === job?.spanId)).toBe(true)
      expect(inJob.length).toBeGreaterThan(2)
    } finally {
      if (!closed) await gw.close()
      await up.close()
      await collector.close()
    }
  })
})

describe("span export with OpenTelemetry's defaults", () => {
  it("sends protobuf to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given", async () => {
    const collector = await startFakeCollector()
    const gw = await startGateway({
      SERVICE_API_KEY: SERVICE_KEY,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/custom/traces`,
      OTEL_BSP_SCHEDULE_DELAY: "20"
    })
    try {
      const caller = callerContext()
      await gw.request("GET", "/api/profiles", {
        headers: { authorization: `Bearer ${SERVICE_KEY}`, traceparent: caller.traceparent }
      })
      // Protobuf carries the trace id as its 16 raw bytes.
      const traceIdBytes = Buffer.from(caller.traceId, "hex")
      const received = await eventually(async () => collector.exports.find((e) => e.body.includes(traceIdBytes)))
      expect(received.path).toBe("/custom/traces")
      expect(received.headers["content-type"]).toBe("application/x-protobuf")
    } finally {
      await gw.close()
      await collector.close()
    }
  })
})

describe("tracing settings", () => {
  const tracingFrom = (env: Record<string, string>) =>
    Effect.runPromise(Effect.map(appConfigFromEnv.parse(ConfigProvider.fromUnknown(env)), (config) => config.tracing))
  const failureFrom = (env: Record<string, string>) =>
    Effect.runPromise(Effect.flip(appConfigFromEnv.parse(ConfigProvider.fromUnknown(env))).pipe(Effect.map(String)))

  it("are off unless an OTLP endpoint is set, and when OpenTelemetry is switched off", async () => {
    expect(Option.isNone(await tracingFrom({}))).toBe(true)
    expect(Option.isNone(await tracingFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: "" }))).toBe(true)
    expect(
      Option.isNone(
        await tracingFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" })
      )
    ).toBe(true)
    expect(
      Option.isNone(
        await tracingFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_TRACES_EXPORTER: "none" })
      )
    ).toBe(true)
    // Malformed OTEL_* settings meant for other services do not stop a gateway that exports nothing.
    expect(Option.isNone(await tracingFrom({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }))).toBe(true)
  })

  it("follow OpenTelemetry's defaults and precedence", async () => {
    const tracing = Option.getOrThrow(
      await tracingFrom({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/",
        OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attributes"
      })
    )
    expect(tracing.url).toBe("http://collector:4318/v1/traces")
    expect(tracing.protocol).toBe("http/protobuf")
    expect(tracing.serviceName).toBe("from-attributes")
    expect(Redacted.value(tracing.headers)).toEqual({})
    const unnamed = Option.getOrThrow(
      await tracingFrom({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://vendor.example/otlp" })
    )
    expect(unnamed.url).toBe("https://vendor.example/otlp")
    expect(unnamed.serviceName).toBe("profile-memory-gateway")
  })

  it("fail the start naming the variable, without repeating a header's value", async () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }
    const headers = await failureFrom({ ...endpoint, OTEL_EXPORTER_OTLP_HEADERS: "api-key=sk-secret-otlp-key,broken" })
    expect(headers).toContain("OTEL_EXPORTER_OTLP_HEADERS")
    expect(headers).not.toContain("sk-secret-otlp-key")
    expect(await failureFrom({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toContain(
      "OTEL_EXPORTER_OTLP_PROTOCOL"
    )
    expect(await failureFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" })).toContain(
      "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
  })
})
