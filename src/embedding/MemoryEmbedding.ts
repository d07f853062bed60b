import { Context, Effect, Layer } from "effect"
import { memoryText } from "../domain/memoryText.ts"
import type { ClaimedJob } from "../jobs/JobQueue.ts"
import { Embedder, EmbeddingFailed } from "./Embedder.ts"
import { VectorsRepo } from "./VectorsRepo.ts"

/** What an `embed` job did, kept on the job row. */
export interface EmbeddingResult {
  readonly model: string
  readonly embedded: number
}

/**
 * Runs `embed` jobs: embeds the profile's memories that have no current vector, a batch at a
 * time, each batch committed on its own (a job cut short resumes where it stopped). At start it
 * queues a job for every profile with such memories: existing memories after an upgrade, and all
 * of them after a model change.
 */
export class MemoryEmbedding extends Context.Service<
  MemoryEmbedding,
  {
    readonly run: (job: ClaimedJob) => Effect.Effect<EmbeddingResult, EmbeddingFailed>
  }
>()("gateway/embedding/MemoryEmbedding") {
  static readonly layer = Layer.effect(
    MemoryEmbedding,
    Effect.gen(function* () {
      const embedder = yield* Embedder
      const vectors = yield* VectorsRepo
      const { model } = embedder
      const batchSize = embedder.settings.batchSize

      if (model !== undefined) {
        // A table scan on a large store: off the start path.
        yield* vectors.enqueueBackfill(model).pipe(
          Effect.tap((queued) =>
            queued > 0 ? Effect.logInfo(`embedding backfill: ${queued} profile(s) queued for ${model}`) : Effect.void
          ),
          Effect.catchCause((cause) => Effect.logWarning("could not queue the embedding backfill", cause)),
          Effect.forkScoped
        )
      }

      const run = Effect.fn("MemoryEmbedding.run")(function* (job: ClaimedJob) {
        if (model === undefined) return yield* new EmbeddingFailed({ message: "embeddings are off (EMBEDDINGS=off)" })
        const { profileId } = job
        let embedded = 0
        while (true) {
          const batch = yield* vectors.unembedded(profileId, model, batchSize)
          if (batch.length === 0) return { model, embedded }
          const computed = yield* embedder.documents(batch.map((memory) => memoryText(memory.content, memory.cues)))
          yield* vectors.write(
            profileId,
            model,
            batch.map((memory, i) => ({ memory, vector: computed[i]! }))
          )
          embedded += batch.length
          // A short batch was the last one.
          if (batch.length < batchSize) return { model, embedded }
        }
      })

      return MemoryEmbedding.of({ run })
    })
  ).pipe(Layer.provide([Embedder.layer, VectorsRepo.layer]))
}
