import { Context, Effect, Layer } from "effect"
import type { ProfileNotFound } from "../domain/errors.ts"
import type { Job } from "../domain/Job.ts"
import { JobQueue } from "../jobs/JobQueue.ts"
import type { PluginRejection } from "../plugins/Plugin.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { Profiles } from "../profiles/Profiles.ts"

/**
 * Queues the extraction of traits and memories from text about the profile's user (`POST
 * /api/profiles/{id}/ingest`). The text is stored with the job as the `beforeRecord` plugins leave it,
 * as they see turns: a plugin's refusal fails the ingest (`PluginRejection`), a plugin's failure is a defect.
 */
export class Ingestion extends Context.Service<
  Ingestion,
  {
    readonly ingest: (
      ref: string,
      text: string,
      source: string | null
    ) => Effect.Effect<Job, ProfileNotFound | PluginRejection>
  }
>()("gateway/profiles/Ingestion") {
  static readonly layer = Layer.effect(
    Ingestion,
    Effect.gen(function* () {
      const profiles = yield* Profiles
      const host = yield* PluginHost
      const queue = yield* JobQueue

      const ingest = Effect.fn("Profiles.ingest")(function* (ref: string, text: string, source: string | null) {
        const profile = yield* profiles.find(ref)
        const [document] = yield* host
          .beforeRecord([{ role: "user", content: text, toolCalls: null, toolCallId: null }])
          .pipe(Effect.catchTag("PluginFailed", (failure) => Effect.die(failure)))
        return yield* queue.enqueueIngest(profile.id, document?.content ?? text, source)
      })

      return Ingestion.of({ ingest })
    })
  ).pipe(Layer.provide([Profiles.layer, JobQueue.layer]))
}
