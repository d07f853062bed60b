import { Context, Effect, Layer } from "effect"
import { Embedder } from "../embedding/Embedder.ts"
import type { ClaimedJob } from "../jobs/JobQueue.ts"
import { CuesRepo } from "./CuesRepo.ts"
import { decodeCueReply, MAX_ITEMS } from "./decodeReply.ts"
import { type ExtractionCallFailed, ExtractionModel } from "./ExtractionModel.ts"
import { cueMessages } from "./prompts.ts"

/** What a `cues` job did, kept on the job row. */
export interface CueResult {
  /** Memories the model was asked about. */
  readonly asked: number
  /** Memories that got cues. */
  readonly written: number
  /** Items of the reply that were not stored, and why. */
  readonly dropped: ReadonlyArray<string>
}

/**
 * Runs `cues` jobs: the extraction model writes cues for memories that were written without them
 * (through the API or MCP), as it does for the memories it extracts, so a message that shares no
 * word with a memory can still find it by the situation it names ("a milkshake after swimming" →
 * "User is lactose intolerant" with the cues "ice cream", "dairy"). One batch per job, the model
 * call outside any transaction; the store queues the next job while memories still wait.
 */
export class CueWriter extends Context.Service<
  CueWriter,
  {
    readonly plan: (
      job: ClaimedJob
    ) => Effect.Effect<{ readonly apply: Effect.Effect<CueResult> }, ExtractionCallFailed>
  }
>()("gateway/extraction/CueWriter") {
  static readonly layer = Layer.effect(
    CueWriter,
    Effect.gen(function* () {
      const store = yield* CuesRepo
      const model = yield* ExtractionModel
      const embeddingsOn = (yield* Embedder).model !== undefined

      const plan = Effect.fn("CueWriter.plan")(function* (job: ClaimedJob) {
        const { profileId } = job
        const memories = yield* store.wanting(profileId, MAX_ITEMS)
        if (memories.length === 0) return { apply: Effect.succeed({ asked: 0, written: 0, dropped: [] }) }
        const refs = memories.map((memory, i) => ({ ref: `m${i + 1}`, memory }))
        const reply = yield* model.complete(
          cueMessages(refs.map(({ ref, memory }) => ({ ref, content: memory.content }))),
          { work: "cues" }
        )
        const { cues, dropped } = decodeCueReply(reply, new Set(refs.map(({ ref }) => ref)))
        // A memory the reply leaves out is settled too (with no new cues), so no job asks about it forever.
        const written = refs.map(({ ref, memory }) => ({ memory, cues: cues.get(ref) ?? [] }))
        return {
          apply: store
            .write(profileId, written, { queueEmbedding: embeddingsOn })
            .pipe(Effect.map((counts) => ({ asked: memories.length, written: counts.written, dropped })))
        }
      })

      return CueWriter.of({ plan })
    })
  ).pipe(Layer.provide([Embedder.layer, ExtractionModel.layer, CuesRepo.layer]))
}
