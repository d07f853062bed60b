import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { AppConfig } from "../src/app/AppConfig.ts"
import { Embedder } from "../src/embedding/Embedder.ts"
import { UpstreamHttp } from "../src/upstream/UpstreamHttp.ts"
import { eventually, FAKE_EMBEDDING_DIMENSIONS, type FakeUpstream, startFakeUpstream } from "./support/fakeUpstream.ts"

/**
 * A request's query vector, from an OpenAI-compatible provider: within its budget
 * (`EMBEDDING_QUERY_TIMEOUT_MS`, kept on Effect's clock, which these tests move) or not at all.
 */

const QUERY_TIMEOUT_MS = 500

const fakeProvider = Effect.acquireRelease(Effect.promise(startFakeUpstream), (up) => Effect.promise(() => up.close()))

/** The embedder the gateway builds for `EMBEDDINGS=provider`, pointed at the fake provider. */
const embedderFor = (up: FakeUpstream) =>
  Layer.build(
    Embedder.layer.pipe(
      Layer.provide(UpstreamHttp.layer),
      Layer.provide(AppConfig.layer),
      Layer.provide(
        ConfigProvider.layer(
          ConfigProvider.fromUnknown({
            EMBEDDINGS: "provider",
            EMBEDDING_BASE_URL: up.url,
            EMBEDDING_MODEL: "embed-test",
            EMBEDDING_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS)
          })
        )
      )
    )
  ).pipe(Effect.map(Context.get(Embedder)))

/** Waits (in real time: the provider is a real server) until `check` holds. */
const until = (check: () => boolean) => Effect.promise(() => eventually(async () => (check() ? true : undefined)))

const embeddingCalls = (up: FakeUpstream) => up.requests.filter((request) => request.path === "/v1/embeddings")

describe("a query vector", () => {
  it.effect("that has not come within EMBEDDING_QUERY_TIMEOUT_MS is given up, and so is the provider call", () =>
    Effect.gen(function* () {
      const up = yield* fakeProvider
      up.handler = () => ({ kind: "hang" })
      const embedder = yield* embedderFor(up)

      const waiting = yield* Effect.forkChild(embedder.query("where do I live?"))
      yield* until(() => embeddingCalls(up).length === 1)
      yield* TestClock.adjust(QUERY_TIMEOUT_MS - 1)
      assert.isUndefined(waiting.pollUnsafe(), "still within its budget")
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* Fiber.join(waiting), { _tag: "Unavailable", reason: "timeout" })
      // Nobody else waits for it: the call is aborted rather than left to queue up under load.
      yield* until(() => embeddingCalls(up)[0]!.aborted)
    })
  )

  it.effect("is computed once for identical queries in flight, and remembered for the next request", () =>
    Effect.gen(function* () {
      const up = yield* fakeProvider
      const embedder = yield* embedderFor(up)
      const [first, second] = yield* Effect.all([embedder.query("tea or coffee?"), embedder.query("tea or coffee?")], {
        concurrency: "unbounded"
      })
      assert.strictEqual(first._tag, "Vector")
      assert.strictEqual(first._tag === "Vector" ? first.vector.length : 0, FAKE_EMBEDDING_DIMENSIONS)
      assert.deepStrictEqual(second, first)
      const again = yield* embedder.query("tea or coffee?")
      assert.deepStrictEqual(again, first)
      assert.strictEqual(embeddingCalls(up).length, 1)
    })
  )

  it.effect("that the provider refuses leaves the request to keywords", () =>
    Effect.gen(function* () {
      const up = yield* fakeProvider
      up.handler = () => ({ kind: "json", status: 503, body: { error: { message: "overloaded" } } })
      const embedder = yield* embedderFor(up)
      assert.deepStrictEqual(yield* embedder.query("anything"), { _tag: "Unavailable", reason: "failed" })
    })
  )
})
