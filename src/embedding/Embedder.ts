import { Cause, Context, Effect, Exit, Fiber, Layer, Metric, Option, Schema } from "effect"
import { EmbeddingModel } from "effect/ai"
import { DatabaseConfig } from "../db/DatabaseConfig.ts"
import { CurrentNamespace } from "../domain/Namespace.ts"
import { embeddingQueryTime } from "../observability/metrics.ts"
import { UpstreamHttp } from "../upstream/UpstreamHttp.ts"
import { UsageRecorder } from "../usage/UsageRecorder.ts"
import { EmbeddingConfig, type EmbeddingSettings } from "./EmbeddingConfig.ts"
import { EmbeddingPriority } from "./EmbeddingPriority.ts"
import { LocalEmbeddingModel } from "./LocalEmbeddingModel.ts"
import { ProviderEmbeddingModel } from "./ProviderEmbeddingModel.ts"
import { normalize, type QuantizedVector, quantize } from "./vectors.ts"

/** Embedding memories failed (the job is retried). */
export class EmbeddingFailed extends Schema.TaggedError<EmbeddingFailed>()("EmbeddingFailed", {
  message: Schema.String
}) {}

/** A query's vector, or why the request goes on without one. */
export type QueryVector =
  | { readonly _tag: "Vector"; readonly vector: Float32Array }
  | { readonly _tag: "Unavailable"; readonly reason: "timeout" | "failed" }

/** Queries longer than this are embedded by their start (the model reads little more anyway). */
const MAX_QUERY_CHARACTERS = 2000

/**
 * Text → vectors for retrieval, by `EMBEDDINGS`: the local model in worker threads, an
 * OpenAI-compatible provider, or nothing. A request's query is embedded within
 * `EMBEDDING_QUERY_TIMEOUT_MS` or not at all (the request then ranks by keywords); recent query
 * vectors are remembered, and identical queries in flight share one computation.
 */
export class Embedder extends Context.Service<
  Embedder,
  {
    /** Identifies the vectors: stored with each one, and a change re-embeds. Undefined when off. */
    readonly model: string | undefined
    readonly settings: EmbeddingSettings
    readonly query: (text: string) => Effect.Effect<QueryVector>
    /** The vector of a text recently embedded as a query, if still remembered (kept so; never computes one). */
    readonly cached: (text: string) => Float32Array | undefined
    readonly documents: (texts: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<QuantizedVector>, EmbeddingFailed>
  }
>()("gateway/embedding/Embedder") {
  static readonly layer = Layer.unwrap(
    Effect.gen(function* () {
      const settings = yield* EmbeddingConfig
      switch (settings.mode) {
        case "off":
          return Layer.succeed(
            Embedder,
            Embedder.of({
              model: undefined,
              settings,
              query: () => Effect.succeed({ _tag: "Unavailable", reason: "failed" }),
              cached: () => undefined,
              documents: () => Effect.fail(new EmbeddingFailed({ message: "embeddings are off (EMBEDDINGS=off)" }))
            })
          )
        case "local": {
          // Where the local model's graph may be kept: DATA_DIR (where the gateway has one).
          const database = yield* Effect.serviceOption(DatabaseConfig)
          return Layer.effect(Embedder, make(LocalEmbeddingModel.modelId, settings)).pipe(
            Layer.provide(
              LocalEmbeddingModel.layer(
                settings,
                Option.getOrUndefined(Option.map(database, (config) => config.dataDir))
              )
            )
          )
        }
        case "provider":
          return Layer.effect(Embedder, make(ProviderEmbeddingModel.modelId(settings), settings)).pipe(
            Layer.provide(ProviderEmbeddingModel.layer(settings))
          )
      }
    })
  ).pipe(Layer.provide([UpstreamHttp.layer]))
}

const make = (model: string, settings: EmbeddingSettings) =>
  Effect.gen(function* () {
    const embeddings = yield* EmbeddingModel.EmbeddingModel
    // The gateway's recorder (none where the embedder runs alone: the doctor, a test).
    const recorder = Option.getOrUndefined(yield* Effect.serviceOption(UsageRecorder))
    /** A provider's tokens are memory work: a query's for the request's namespace, a document's for the job's profile. */
    const recordUsage = (response: EmbeddingModel.EmbedManyResponse, namespace: string | undefined) =>
      settings.mode !== "provider" || recorder === undefined
        ? Effect.void
        : recorder.record({
            work: "embedding",
            namespace,
            keyId: undefined,
            userId: undefined,
            profileId: undefined,
            provider: "openai",
            api: "embeddings",
            model: settings.model,
            usage:
              response.usage.inputTokens === undefined
                ? undefined
                : { input: response.usage.inputTokens, cachedInput: 0, cacheWrite: 0, output: 0, reasoning: 0 },
            injected: 0
          })
    // Most recently used last; the first entry is the one to evict.
    const recent = new Map<string, Float32Array>()
    const inFlight = new Map<string, { readonly fiber: Fiber.Fiber<Float32Array, unknown>; waiters: number }>()
    const remember = (text: string, vector: Float32Array) => {
      if (settings.queryCacheSize === 0) return
      recent.set(text, vector)
      if (recent.size > settings.queryCacheSize) recent.delete(recent.keys().next().value!)
    }

    /** A remembered vector, now the most recently used. */
    const recall = (text: string) => {
      const known = recent.get(text)
      if (known !== undefined) {
        recent.delete(text)
        recent.set(text, known)
      }
      return known
    }

    const query = (input: string): Effect.Effect<QueryVector> =>
      Effect.suspend((): Effect.Effect<QueryVector> => {
        const text = input.slice(0, MAX_QUERY_CHARACTERS)
        const known = recall(text)
        if (known !== undefined) return Effect.succeed({ _tag: "Vector", vector: known } as const)
        return Effect.gen(function* (): Effect.fn.Return<QueryVector> {
          let pending = inFlight.get(text)
          if (pending === undefined) {
            const scope = yield* CurrentNamespace
            const namespace = scope?._tag === "One" ? scope.name : undefined
            // Its own fiber: requests with the same message share it, and the vector is remembered.
            // `embedMany`, not the batching `embed`: interrupting it takes the query out of the line.
            const fiber = yield* embeddings.embedMany([text]).pipe(
              Effect.tap((response) => recordUsage(response, namespace)),
              Effect.map((response) => normalize(response.embeddings[0]!.vector)),
              Effect.tap((vector) => Effect.sync(() => remember(text, vector))),
              Effect.ensuring(Effect.sync(() => inFlight.delete(text))),
              Effect.provideService(EmbeddingPriority, "query"),
              Effect.forkDetach
            )
            pending = { fiber, waiters: 0 }
            inFlight.set(text, pending)
          }
          const waiting = pending
          waiting.waiters++
          const started = performance.now()
          const exit = yield* Fiber.await(waiting.fiber).pipe(
            Effect.timeoutOption(settings.queryTimeoutMs),
            Effect.ensuring(Effect.sync(() => waiting.waiters--))
          )
          yield* Metric.update(embeddingQueryTime, (performance.now() - started) / 1000)
          if (Option.isNone(exit)) {
            // Nobody waits for it now: under overload, queued queries must not pile up.
            if (waiting.waiters === 0) yield* Fiber.interrupt(waiting.fiber).pipe(Effect.forkDetach)
            return { _tag: "Unavailable", reason: "timeout" } as const
          }
          if (Exit.isSuccess(exit.value)) return { _tag: "Vector", vector: exit.value.value } as const
          if (!Cause.hasInterruptsOnly(exit.value.cause))
            yield* Effect.logWarning("query embedding failed; ranking by keywords", exit.value.cause)
          return { _tag: "Unavailable", reason: "failed" } as const
        })
      })

    const documents = (texts: ReadonlyArray<string>) =>
      embeddings.embedMany(texts).pipe(
        Effect.tap((response) => recordUsage(response, undefined)),
        Effect.map((response) => response.embeddings.map((embedding) => quantize(embedding.vector))),
        Effect.mapError((error) => new EmbeddingFailed({ message: error.message })),
        Effect.withSpan("Embedder.documents", { attributes: { count: texts.length } })
      )

    const cached = (text: string) => recall(text.slice(0, MAX_QUERY_CHARACTERS))

    return Embedder.of({ model, settings, query, cached, documents })
  })
