import { Effect } from "effect"
import { JobQueue } from "../jobs/JobQueue.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { Profiles } from "./Profiles.ts"

/**
 * Queues the extraction of traits and memories from text about the profile's user (`POST
 * /api/profiles/{id}/ingest`). The text is stored with the job as the `beforeRecord` plugins leave it,
 * as they see turns: a plugin's refusal fails the ingest (`PluginRejection`), a plugin's failure is a defect.
 */
export const ingestText = Effect.fn("Profiles.ingest")(function* (ref: string, text: string, source: string | null) {
  const profile = yield* (yield* Profiles).find(ref)
  const [document] = yield* (yield* PluginHost)
    .beforeRecord([{ role: "user", content: text, toolCalls: null, toolCallId: null }])
    .pipe(Effect.catchTag("PluginFailed", (failure) => Effect.die(failure)))
  return yield* (yield* JobQueue).enqueueIngest(profile.id, document?.content ?? text, source)
})
