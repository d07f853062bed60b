import { Config, Context, Option, Schema } from "effect"
import { intBetween, nonNegativeInt, optionalSecret, PositiveInt, positiveInt, section, url } from "../config/values.ts"
import type { UpstreamEndpoint } from "../upstream/UpstreamConfig.ts"

export const EmbeddingsMode = Schema.Literals(["local", "provider", "off"])
export type EmbeddingsMode = typeof EmbeddingsMode.Type

/** The query budget by mode: a thread on this machine answers in milliseconds, a provider over HTTP in tens. */
const QUERY_TIMEOUT_DEFAULTS = { local: 100, provider: 500, off: 0 } as const

/**
 * How memories and messages get their vectors (`EMBEDDINGS`, `EMBEDDING_*`). `fallback`: the
 * provider's base URL and key when `EMBEDDING_BASE_URL` / `EMBEDDING_API_KEY` are unset.
 */
export const embeddingFromEnv = (fallback: UpstreamEndpoint) =>
  section({
    /** `local`: the model shipped in node_modules; `provider`: an OpenAI-compatible `/embeddings`; `off`: keywords only. */
    mode: Config.schema(EmbeddingsMode, "EMBEDDINGS").pipe(Config.withDefault("local" as const)),
    /** The provider's base URL and model (mode `provider`). */
    baseUrl: Config.option(url("EMBEDDING_BASE_URL")).pipe(Config.map(Option.getOrElse(() => fallback.baseUrl))),
    model: Config.String("EMBEDDING_MODEL").pipe(Config.withDefault("text-embedding-3-small")),
    apiKey: optionalSecret("EMBEDDING_API_KEY").pipe(Config.map(Option.orElse(() => fallback.apiKey))),
    /** Unset: by mode (below). */
    queryTimeoutMs: Config.option(Config.schema(PositiveInt, "EMBEDDING_QUERY_TIMEOUT_MS")),
    /** Worker threads running the local model. */
    threads: positiveInt("EMBEDDING_THREADS", 1),
    /** Loops per process taking `embed` jobs (0: this replica embeds nothing in the background). */
    concurrency: nonNegativeInt("EMBEDDING_CONCURRENCY", 1),
    /** Memories embedded per model call in the background. */
    batchSize: intBetween("EMBEDDING_BATCH_SIZE", { minimum: 1, maximum: 256 }, 32),
    /** Recent query vectors kept in memory. */
    queryCacheSize: nonNegativeInt("EMBEDDING_QUERY_CACHE_SIZE", 1000)
  }).pipe(
    Config.map((c) => ({
      ...c,
      /** Longest a request waits for its query vector before ranking by keywords alone. */
      queryTimeoutMs: Option.getOrElse(c.queryTimeoutMs, (): number => QUERY_TIMEOUT_DEFAULTS[c.mode])
    }))
  )

export type EmbeddingSettings = Readonly<Config.Success<ReturnType<typeof embeddingFromEnv>>>

export class EmbeddingConfig extends Context.Service<EmbeddingConfig, EmbeddingSettings>()(
  "gateway/embedding/EmbeddingConfig"
) {}
