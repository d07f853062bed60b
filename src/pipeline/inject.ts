import { Clock, Effect, Metric, Option } from "effect"
import type { ChatRequest } from "../apis/ChatRequest.ts"
import type { TraitDefinition } from "../domain/TraitDefinition.ts"
import { ContextBlock } from "../injection/ContextBlock.ts"
import type { InjectionReceipt } from "../injection/receipt.ts"
import { MemoryAccess } from "../memories/MemoryAccess.ts"
import { labelled, memoryRetrievals } from "../observability/metrics.ts"
import { requestStage } from "../observability/requestSpan.ts"
import { memoryPredicate } from "../retrieval/memoryFilter.ts"
import type { ProfileSnapshot } from "../snapshots/SnapshotsRepo.ts"

const retrievalsOf = labelled(memoryRetrievals)

/**
 * Stage 3: what is known about the user, and what the app knows for all its users that is relevant
 * (`shared`: its namespace's shared knowledge, unless the request leaves it out), as the context block
 * for the system prompt (`ContextBlock`), and the memories it used noted as accessed. No block without
 * a profile (the database was unavailable), when the request skips injection, or when there is
 * nothing to say.
 */
export const makeInject = Effect.gen(function* () {
  const contextBlock = yield* ContextBlock
  const memoryAccess = yield* MemoryAccess
  return Effect.fnUntraced(function* (
    request: ChatRequest,
    snapshot: Option.Option<ProfileSnapshot>,
    definitions: ReadonlyMap<string, TraitDefinition>,
    /** Lines the request carries already (earlier turns' blocks): not written again. */
    shown: ReadonlySet<string> | undefined,
    shared: Option.Option<ProfileSnapshot>
  ) {
    if (Option.isNone(snapshot)) return { context: undefined, receipt: "unavailable" as const }
    if (request.skipInjection) return { context: undefined, receipt: { skipped: true } as InjectionReceipt }
    const now = yield* Clock.currentTimeMillis
    const { context, receipt } = yield* contextBlock.render(
      request.messages,
      snapshot.value,
      definitions,
      now,
      memoryPredicate(request.memoryFilter),
      shown,
      Option.getOrUndefined(shared)
    )
    yield* Metric.update(retrievalsOf({ mode: receipt.retrieval, semantic: receipt.semantic }), 1)
    if (receipt.memories.length > 0) yield* memoryAccess.note(snapshot.value.profile.id, receipt.memories, now)
    if (receipt.sharedMemories.length > 0 && Option.isSome(shared))
      yield* memoryAccess.note(shared.value.profile.id, receipt.sharedMemories, now)
    return { context, receipt }
  }, requestStage("pipeline.inject"))
})
