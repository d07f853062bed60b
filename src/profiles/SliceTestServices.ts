import { ConfigProvider, Effect, Layer } from "effect"
import { layerDefaults } from "../config/defaults.ts"
import { DatabaseConfig, databaseFromEnv } from "../db/DatabaseConfig.ts"
import { DEFAULT_NAMESPACE, inNamespace } from "../domain/Namespace.ts"
import { Embedder } from "../embedding/Embedder.ts"
import { EmbeddingConfig, embeddingFromEnv } from "../embedding/EmbeddingConfig.ts"
import { RetrievalConfig, retrievalFromEnv } from "../retrieval/RetrievalConfig.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { UpstreamConfig, upstreamFromEnv } from "../upstream/UpstreamConfig.ts"

/** Embeddings off (a test of a slice loads no model), the rest of the section at its defaults. */
const EmbeddingsOff = Layer.effect(
  EmbeddingConfig,
  Effect.gen(function* () {
    const upstream = yield* upstreamFromEnv
    return yield* embeddingFromEnv(upstream.openai)
  })
).pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ EMBEDDINGS: "off" }))))

/**
 * What the profile, trait and memory services need besides the database, for their test layers:
 * the configuration sections they read at their defaults (not the process environment) with
 * embeddings off, and the real context cache (their changes must drop what it holds), acting in the
 * `default` namespace. Needs only a `PgClient`. A slice's `layerTest` adds the sections of its own.
 */
export const SliceTestServices = Layer.merge(SnapshotCache.layer, Embedder.layer).pipe(
  Layer.provideMerge(
    Layer.mergeAll(
      layerDefaults(DatabaseConfig, databaseFromEnv),
      layerDefaults(UpstreamConfig, upstreamFromEnv),
      layerDefaults(RetrievalConfig, retrievalFromEnv),
      EmbeddingsOff
    )
  ),
  Layer.provideMerge(inNamespace(DEFAULT_NAMESPACE))
)
