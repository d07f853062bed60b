import { randomBytes } from "node:crypto"
import { ConfigProvider, Effect, Option, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { appConfigFromEnv } from "../src/config/AppConfig.ts"
import { type FakeCollector, startFakeCollector } from "./support/fakeCollector.ts"
import { eventually, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"

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

describe("span export over OTLP/HTTP (JSON)", () => {
  let collector: FakeCollector
  let up: FakeUpstream
  let gw: TestGateway
  beforeAll(async () => {
    collector = await startFakeCollector()
    up = await startFakeUpstream()
    gw = await startGateway({
      UPSTREAM_BASE_URL: up.url,
      UPSTREAM_API_KEY: "sk-test-default-upstream",
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
    expect(
      collector.spans().some((span) => span.name === "Upstream.chat" && span.parentSpanId === forward.spanId)
    ).toBe(true)

    const [received] = collector.exports
    expect(received!.path).toBe("/v1/traces")
    expect(received!.headers["content-type"]).toContain("application/json")
    expect(received!.headers["x-collector-key"]).toBe("secret value")
    // The traces-only variable wins over the shared one, name by name.
    expect(received!.headers["x-tenant"]).toBe("tracing")
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
