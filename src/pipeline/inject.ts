import { Clock, Effect, Metric, Option } from "effect"
import { labelled, memoryRetrievals } from "../observability/metrics.ts"
import { AppConfig } from "../config/AppConfig.ts"
import { latestUserText } from "../context/injectContext.ts"
import { renderSections } from "../context/renderContext.ts"
import { coreInjected } from "../plugins/builtin/core.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import type { ProfileSnapshot } from "../store/ContextStore.ts"
import { MemoryAccess } from "../store/MemoryAccess.ts"
import { Retrieval, type RetrievalMode, type SemanticStatus } from "../retrieval/Retrieval.ts"
import type { ScoredMemory } from "../retrieval/scoreMemories.ts"
import type { TraitDefinition } from "../traits/TraitDefinition.ts"
import type { ChatRequest } from "./ChatRequest.ts"
import { requestSpan } from "../observability/requestSpan.ts"

/** What was injected, reported to the caller in the `X-Service-Context` header. */
export type InjectionReceipt =
  | { readonly skipped: true }
  | {
    readonly skipped: false
    readonly summary: boolean
    readonly traits: ReadonlyArray<string>
    readonly memories: ReadonlyArray<string>
    /** Plugins whose sections made it into the block. */
    readonly plugins: ReadonlyArray<string>
    readonly estimatedTokens: number
    /** How the memories were chosen, and why without vectors if so. */
    readonly retrieval: RetrievalMode
    readonly semantic: SemanticStatus
  }

const retrievalsOf = labelled(memoryRetrievals)

/** A scored memory as plugins see it. */
const rankedOf = ({ memory, score }: ScoredMemory) => ({
  id: memory.id,
  content: memory.content,
  type: memory.type,
  score,
  occurredOn: memory.occurredAt === null ? undefined : new Date(memory.occurredAt).toISOString().slice(0, 10)
})

/**
 * Stage 3: what is known about the user, as the context block for the system prompt: the sections
 * the plugins contribute (the built-in `core` plugin: summary, traits, the memories most relevant
 * to the latest user message), rendered within the token budget. No block without a profile (the
 * database was unavailable), when the request skips injection, or when there is nothing to say.
 */
export const inject = Effect.fnUntraced(function*(
  request: ChatRequest,
  snapshot: Option.Option<ProfileSnapshot>,
  definitions: ReadonlyMap<string, TraitDefinition>
) {
  if (Option.isNone(snapshot)) return { context: undefined, receipt: "unavailable" as const }
  if (request.skipInjection) return { context: undefined, receipt: { skipped: true } as InjectionReceipt }
  const config = yield* AppConfig
  const host = yield* PluginHost
  const { profile } = snapshot.value
  const latest = latestUserText(request.messages)
  const now = yield* Clock.currentTimeMillis
  const retrieved = yield* (yield* Retrieval).forInjection(snapshot.value.memories, latest, now)
  yield* Metric.update(retrievalsOf({ mode: retrieved.mode, semantic: retrieved.semantic }), 1)
  const sections = yield* host.inject({
    profile,
    traits: snapshot.value.traits,
    memories: retrieved.memories.map(rankedOf),
    definitions,
    valueTypes: host.valueTypes,
    latestUserText: latest
  })
  const rendered = renderSections(sections, config.injection.maxTokens)
  const injected = coreInjected(rendered.included)
  if (injected.memories.length > 0) yield* (yield* MemoryAccess).note(profile.id, injected.memories, now)
  const receipt: InjectionReceipt = {
    skipped: false,
    ...injected,
    plugins: [...new Set(rendered.included.map((section) => section.plugin))],
    estimatedTokens: rendered.estimatedTokens,
    retrieval: retrieved.mode,
    semantic: retrieved.semantic
  }
  return { context: rendered.text, receipt }
}, requestSpan("pipeline.inject"))
