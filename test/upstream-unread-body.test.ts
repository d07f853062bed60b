import { ConfigProvider, Deferred, Effect, Fiber, Layer, Redacted, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { TracingLive } from "../src/observability/Tracing.ts"
import { TracingConfig, tracingFromEnv } from "../src/observability/TracingConfig.ts"
import { makeChunkReader } from "../src/providers/openai/stream.ts"
import { providers } from "../src/providers/providers.ts"
import { Upstream } from "../src/upstream/Upstream.ts"
import { UpstreamConfig, upstreamFromEnv } from "../src/upstream/UpstreamConfig.ts"
import { UpstreamHttp } from "../src/upstream/UpstreamHttp.ts"
import type { UpstreamReply } from "../src/upstream/UpstreamReply.ts"
import { anthropicEvent, anthropicMessage } from "./support/anthropicWire.ts"
import { startFakeCollector } from "./support/fakeCollector.ts"
import { chunkFrames, eventually, type FakeUpstream, type Reply, startFakeUpstream } from "./support/fakeUpstream.ts"
import { streamedRequest } from "./support/streamedRequest.ts"

const API_KEY = "sk-test-unread-body"

/** An answer the provider is still writing long after the checks below are done: many frames, slowly. */
const longStream = (frame: string): Reply => ({
  kind: "sse",
  frames: Array.from({ length: 2000 }, () => frame),
  intervalMs: 20
})
const openAiFrame = chunkFrames(["word"])[1]!
const anthropicFrame = anthropicEvent("content_block_delta", {
  index: 0,
  delta: { type: "text_delta", text: "word" }
})

type Call = (upstream: Upstream["Service"], tag: string) => Effect.Effect<UpstreamReply, unknown>

/** A Chat Completions stream relayed as the provider sends it. */
const relay: Call = (upstream, tag) =>
  upstream.relay(
    { provider: "openai", apiKey: Redacted.make(API_KEY) },
    "/chat/completions",
    { model: "gpt-test", stream: true, messages: [{ role: "user", content: tag }] },
    { headers: {} },
    makeChunkReader
  )

const anthropicChat = providers.anthropic.chat
if (anthropicChat === undefined) throw new Error("Anthropic translates Chat Completions")

/** An answer from Anthropic translated back (`translated`, by Anthropic's chat translation). */
const viaAnthropic: Call = (upstream, tag) =>
  upstream.translated(
    { provider: "anthropic", apiKey: Redacted.make(API_KEY) },
    anthropicChat,
    { model: "claude-test", stream: true, max_tokens: 64, messages: [{ role: "user", content: tag }] },
    { headers: {} },
    {
      includeUsage: false,
      encodeStream: () => (events) => ({ bytes: new TextEncoder().encode(JSON.stringify(events)), events }),
      encodeBody: (completion) => completion
    }
  )

/** The request the provider received for `tag` (the content of its one message). */
const receivedFor = (up: FakeUpstream, tag: string) =>
  up.requests.find((request) => {
    const messages = request.body?.["messages"] as ReadonlyArray<{ readonly content: string }> | undefined
    return messages?.[0]?.content === tag
  })

/** Waits until the provider saw its answer to `tag` cut off before it had finished writing it. */
const closedEarly = (up: FakeUpstream, tag: string) =>
  eventually(async () => (receivedFor(up, tag)?.aborted === true ? true : undefined))

/**
 * The three ways a streamed answer's request goes: written (its stream run to its end), the client
 * gone before the body (Node's adapter then writes nothing and leaves a stream body unrun), and the
 * request interrupted (client gone, shutdown) after the call returned, before its answer.
 */
const scenarios = (upstream: Upstream["Service"], up: FakeUpstream, call: Call, prefix: string) =>
  Effect.gen(function* () {
    up.enqueue(
      prefix === "openai"
        ? { kind: "sse", frames: chunkFrames(["Hel", "lo"], { usage: true }) }
        : {
            kind: "sse",
            frames: [
              anthropicEvent("message_start", {
                message: {
                  ...anthropicMessage([], ""),
                  stop_reason: null,
                  usage: { input_tokens: 12, output_tokens: 1 }
                }
              }),
              anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
              anthropicFrame,
              anthropicEvent("content_block_stop", { index: 0 }),
              anthropicEvent("message_delta", {
                delta: { stop_reason: "end_turn", stop_sequence: null },
                usage: { output_tokens: 2 }
              }),
              anthropicEvent("message_stop", {})
            ]
          }
    )
    const written: Array<Uint8Array> = []
    yield* streamedRequest(call(upstream, `${prefix} written`), (response) =>
      response.body._tag === "Stream"
        ? Effect.orDie(Stream.runForEach(response.body.stream, (bytes) => Effect.sync(() => written.push(bytes))))
        : Effect.void
    )
    up.enqueue(longStream(prefix === "openai" ? openAiFrame : anthropicFrame))
    yield* streamedRequest(call(upstream, `${prefix} client gone`), () => Effect.void)
    up.enqueue(longStream(prefix === "openai" ? openAiFrame : anthropicFrame))
    const answered = yield* Deferred.make<void>()
    const request = yield* Effect.forkChild(
      streamedRequest(call(upstream, `${prefix} interrupted`), () => Effect.void, {
        respond: Deferred.succeed(answered, undefined).pipe(Effect.andThen(Effect.never))
      })
    )
    yield* Deferred.await(answered)
    yield* Fiber.interrupt(request)
    // The provider sees the unread answers' connections closed while it is still writing them.
    yield* Effect.promise(() =>
      Promise.all([closedEarly(up, `${prefix} client gone`), closedEarly(up, `${prefix} interrupted`)])
    )
    return written
  })

/** Upstream over the fake provider, with spans exported to `collectorUrl` when given. */
const services = (up: FakeUpstream, collectorUrl?: string) => {
  const env = ConfigProvider.fromUnknown({
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: API_KEY,
    ANTHROPIC_BASE_URL: up.url,
    ...(collectorUrl === undefined
      ? {}
      : {
          OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl,
          OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
          OTEL_BSP_SCHEDULE_DELAY: "20"
        })
  })
  const upstream = Upstream.layer.pipe(
    Layer.provideMerge(UpstreamHttp.layer),
    Layer.provide(Layer.effect(UpstreamConfig, upstreamFromEnv.parse(env)))
  )
  return collectorUrl === undefined
    ? upstream
    : Layer.merge(upstream, TracingLive.pipe(Layer.provide(Layer.effect(TracingConfig, tracingFromEnv.parse(env)))))
}

describe("a streamed answer never read", () => {
  for (const tracing of [false, true]) {
    it(`has its provider connection closed when the request ends without running it (${tracing ? "with" : "without"} tracing)`, async () => {
      const up = await startFakeUpstream()
      const collector = tracing ? await startFakeCollector() : undefined
      try {
        const [relayed, translated] = await Effect.runPromise(
          Effect.gen(function* () {
            const upstream = yield* Upstream
            return [
              yield* scenarios(upstream, up, relay, "openai"),
              yield* scenarios(upstream, up, viaAnthropic, "anthropic")
            ] as const
          }).pipe(Effect.provide(services(up, collector?.url)))
        )
        // A stream that is run reads the provider's whole answer, as before.
        const text = new TextDecoder().decode(Buffer.concat(relayed))
        expect(text).toContain('"content":"lo"')
        expect(text).toContain("[DONE]")
        expect(new TextDecoder().decode(Buffer.concat(translated))).toContain('"word"')
        for (const tag of ["openai written", "anthropic written"]) {
          expect(receivedFor(up, tag)?.aborted).toBe(false)
        }
      } finally {
        await up.close()
        await collector?.close()
      }
    })
  }
})
