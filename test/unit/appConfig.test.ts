import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Option, Redacted } from "effect"
import { AppConfig, appConfigFromEnv } from "../../src/app/AppConfig.ts"
import { deepMerge } from "../../src/config/deepMerge.ts"
import { DatabaseConfig } from "../../src/db/DatabaseConfig.ts"
import { EmbeddingConfig } from "../../src/embedding/EmbeddingConfig.ts"
import { ExtractionConfig } from "../../src/extraction/ExtractionConfig.ts"
import { ServerConfig } from "../../src/http/ServerConfig.ts"
import { RetrievalConfig } from "../../src/retrieval/RetrievalConfig.ts"
import { UpstreamConfig } from "../../src/upstream/UpstreamConfig.ts"

const environment = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromUnknown(env))

/** The configuration and its sections, as a layer builds them from `env`. */
const built = <A, E>(layer: Layer.Layer<A, E>, env: Record<string, string> = {}) =>
  Layer.build(layer.pipe(Layer.provide(environment(env))))

/** The message a start with `env` fails with. */
const failure = (env: Record<string, string>) =>
  appConfigFromEnv.parse(ConfigProvider.fromUnknown(env)).pipe(
    Effect.flip,
    Effect.map((error) => String(error))
  )

const secret = (value: Option.Option<Redacted.Redacted<string>>) => Option.map(value, Redacted.value)

describe("AppConfig.layerFrom", () => {
  it.effect(
    "overrides one nested value and keeps the rest of its section, in AppConfig and in the section's service",
    () =>
      Effect.gen(function* () {
        const context = yield* built(AppConfig.layerFrom({ extraction: { concurrency: 0 } }), {
          EXTRACTION_MODEL: "small-model",
          EXTRACTION_MAX_ATTEMPTS: "7",
          EXTRACTION_MODALITIES: "image, text"
        })
        const extraction = Context.get(context, ExtractionConfig)
        assert.strictEqual(extraction.concurrency, 0)
        assert.strictEqual(extraction.model, "small-model")
        assert.strictEqual(extraction.maxAttempts, 7)
        assert.strictEqual(extraction.leaseMs, 60_000)
        // Text is always read; the modalities listed are added to it.
        assert.deepStrictEqual(extraction.modalities, ["text", "image"])
        assert.strictEqual(extraction.attachmentMaxBytes, 5 * 1024 * 1024)
        assert.strictEqual(Context.get(context, AppConfig).extraction, extraction)
        // The other sections are the environment's.
        assert.strictEqual(Context.get(context, ServerConfig).port, 3100)
      })
  )

  it.effect("merges objects at any depth; lists, Options and secrets are replaced whole", () =>
    Effect.gen(function* () {
      const context = yield* built(
        AppConfig.layerFrom({
          server: { corsOrigins: ["https://app.example.com"] },
          database: { contextCache: { ttlMs: 5 }, url: Option.some(Redacted.make("postgres://override")) },
          retrieval: { ranking: { relevanceFloor: Option.none() }, memoryHalfLifeDays: { event: 2 } },
          upstream: { openai: { apiKey: Option.some(Redacted.make("sk-override")) } }
        }),
        {
          CORS_ORIGINS: "https://a.example.com,https://b.example.com",
          CONTEXT_CACHE_SIZE: "7",
          DATABASE_URL: "postgres://env",
          MEMORY_RELEVANCE_FLOOR: "0.3",
          UPSTREAM_BASE_URL: "https://llm.example.com/v1"
        }
      )
      assert.deepStrictEqual(Context.get(context, ServerConfig).corsOrigins, ["https://app.example.com"])
      const database = Context.get(context, DatabaseConfig)
      assert.deepStrictEqual(database.contextCache, { size: 7, ttlMs: 5, fenceMs: 500 })
      assert.deepStrictEqual(secret(database.url), Option.some("postgres://override"))
      const retrieval = Context.get(context, RetrievalConfig)
      assert.isTrue(Option.isNone(retrieval.ranking.relevanceFloor))
      assert.strictEqual(retrieval.ranking.mode, "learned")
      assert.deepStrictEqual(retrieval.memoryHalfLifeDays, { fact: 365, preference: 180, event: 2, context: 60 })
      const openai = Context.get(context, UpstreamConfig).openai
      assert.strictEqual(openai.baseUrl, "https://llm.example.com/v1")
      assert.deepStrictEqual(secret(openai.apiKey), Option.some("sk-override"))
    })
  )

  it.effect("still fails on a bad variable, naming it, whatever it overrides", () =>
    Effect.gen(function* () {
      const error = yield* built(AppConfig.layerFrom({ server: { port: 4000 } }), { PORT: "not-a-port" }).pipe(
        Effect.flip
      )
      assert.include(String(error), "PORT")
    })
  )
})

describe("deepMerge", () => {
  it("leaves both of its inputs as they were", () => {
    const base = { a: { b: 1, c: [1, 2] }, d: "x" }
    const merged = deepMerge(base, { a: { c: [3] } })
    assert.deepStrictEqual(merged, { a: { b: 1, c: [3] }, d: "x" })
    assert.deepStrictEqual(base, { a: { b: 1, c: [1, 2] }, d: "x" })
  })
})

describe("reading the environment", () => {
  it.effect("fails at start naming the variable and what it expected", () =>
    Effect.gen(function* () {
      for (const [variable, value, expected] of [
        ["PORT", "not-a-port", "a string representing a finite number"],
        ["UPSTREAM_BASE_URL", "ftp://example.com", "an http:// or https:// URL"],
        ["LOG_LEVEL", "loud", '"info"'],
        ["API_MAX_BODY_BYTES", "0", "greater than or equal to 1"],
        ["SHUTDOWN_DRAIN_MS", "999", "between 1000 and 600000"],
        ["MEMORY_RELEVANCE_FLOOR", "1.5", "between 0 and 1"],
        ["EXTRACTION_BASE_URL", "nope", "an http:// or https:// URL"],
        ["EXTRACTION_MODALITIES", "text,video", "a comma-separated list of text, image and file"],
        ["EMBEDDINGS", "remote", '"provider"']
      ] as const) {
        const message = yield* failure({ [variable]: value })
        assert.include(message, variable)
        assert.include(message, expected)
      }
    })
  )

  it.effect("refuses every retired ranking variable with the word that ranking is now a fitted model", () =>
    Effect.gen(function* () {
      for (const variable of [
        "MEMORY_RANK_SEMANTIC_WEIGHT",
        "MEMORY_RANK_KEYWORD_WEIGHT",
        "MEMORY_RANK_IMPORTANCE_WEIGHT",
        "MEMORY_RANK_RECENCY_WEIGHT",
        "MEMORY_RANK_TIME_WEIGHT",
        "MEMORY_RANK_RELEVANCE_WEIGHT",
        "EMBEDDING_SIMILARITY_FLOOR",
        "EMBEDDING_SIMILARITY_FULL"
      ]) {
        const message = yield* failure({ [variable]: "0.5" })
        assert.include(message, variable)
        assert.include(
          message,
          "unset (ranking is now a fitted model: see docs/retrieval.md; MEMORY_RELEVANCE_FLOOR is a probability)"
        )
      }
    })
  )

  it.effect("gives extraction the default provider's base URL and UPSTREAM_API_KEY unless it has its own", () =>
    Effect.gen(function* () {
      const openai = Context.get(yield* built(AppConfig.layer, { UPSTREAM_API_KEY: "sk-up" }), ExtractionConfig)
      assert.strictEqual(openai.baseUrl, "https://api.openai.com/v1")
      assert.deepStrictEqual(secret(openai.apiKey), Option.some("sk-up"))
      const anthropic = Context.get(
        yield* built(AppConfig.layer, {
          UPSTREAM_PROVIDER: "anthropic",
          UPSTREAM_API_KEY: "sk-up",
          ANTHROPIC_API_KEY: "sk-ant"
        }),
        ExtractionConfig
      )
      assert.strictEqual(anthropic.baseUrl, "https://api.anthropic.com/v1")
      assert.deepStrictEqual(secret(anthropic.apiKey), Option.some("sk-up"))
      const own = Context.get(
        yield* built(AppConfig.layer, {
          UPSTREAM_API_KEY: "sk-up",
          EXTRACTION_BASE_URL: "https://extract.example.com/v1/",
          EXTRACTION_API_KEY: "sk-extract"
        }),
        ExtractionConfig
      )
      assert.strictEqual(own.baseUrl, "https://extract.example.com/v1")
      assert.deepStrictEqual(secret(own.apiKey), Option.some("sk-extract"))
    })
  )

  it.effect(
    "gives embeddings the OpenAI upstream's base URL, and its key only while OpenAI is the default provider",
    () =>
      Effect.gen(function* () {
        const env = {
          UPSTREAM_BASE_URL: "https://llm.example.com/v1",
          UPSTREAM_API_KEY: "sk-up",
          EMBEDDINGS: "provider"
        }
        const openai = Context.get(yield* built(AppConfig.layer, env), EmbeddingConfig)
        assert.strictEqual(openai.baseUrl, "https://llm.example.com/v1")
        assert.deepStrictEqual(secret(openai.apiKey), Option.some("sk-up"))
        assert.strictEqual(openai.queryTimeoutMs, 500)
        const anthropic = Context.get(
          yield* built(AppConfig.layer, { ...env, UPSTREAM_PROVIDER: "anthropic" }),
          EmbeddingConfig
        )
        assert.strictEqual(anthropic.baseUrl, "https://llm.example.com/v1")
        assert.isTrue(Option.isNone(anthropic.apiKey))
      })
  )

  it.effect(
    "gives Anthropic ANTHROPIC_API_KEY whichever provider is the default, else UPSTREAM_API_KEY when it is",
    () =>
      Effect.gen(function* () {
        const upstreamOf = (env: Record<string, string>) =>
          Effect.map(built(AppConfig.layer, env), (context) => Context.get(context, UpstreamConfig))
        const both = yield* upstreamOf({ UPSTREAM_API_KEY: "sk-up", ANTHROPIC_API_KEY: "sk-ant" })
        assert.deepStrictEqual(secret(both.openai.apiKey), Option.some("sk-up"))
        assert.deepStrictEqual(secret(both.anthropic.apiKey), Option.some("sk-ant"))
        const anthropicDefault = yield* upstreamOf({ UPSTREAM_PROVIDER: "anthropic", UPSTREAM_API_KEY: "sk-up" })
        assert.isTrue(Option.isNone(anthropicDefault.openai.apiKey))
        assert.deepStrictEqual(secret(anthropicDefault.anthropic.apiKey), Option.some("sk-up"))
        const openaiDefault = yield* upstreamOf({ UPSTREAM_API_KEY: "sk-up" })
        assert.isTrue(Option.isNone(openaiDefault.anthropic.apiKey))
      })
  )
})
