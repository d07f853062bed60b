import { Effect } from "effect"
import type { ChatMessage } from "../apis/ChatRequest.ts"
import { coreInjected } from "../plugins/builtin/core.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { conversationQueryOf } from "../retrieval/conversationQuery.ts"
import { Retrieval, type RetrievalMode, type SemanticStatus } from "../retrieval/Retrieval.ts"
import { RetrievalConfig } from "../retrieval/RetrievalConfig.ts"
import type { ScoredMemory } from "../retrieval/scoreMemories.ts"
import type { ProfileSnapshot } from "../snapshots/SnapshotStore.ts"
import type { TraitDefinition } from "../traits/TraitDefinition.ts"
import type { RenderedReceipt } from "./receipt.ts"
import { renderSections } from "./renderContext.ts"

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

/** A scored memory as plugins see it. */
const rankedOf = ({ changedFact, memory, score }: ScoredMemory) => ({
  id: memory.id,
  content: memory.content,
  type: memory.type,
  score,
  occurredOn: memory.occurredAt === null ? undefined : dayOf(memory.occurredAt),
  rememberedOn: changedFact === true ? dayOf(memory.createdAt) : undefined
})

const dayOf = (at: number) => new Date(at).toISOString().slice(0, 10)

/**
 * The context block for a profile and a conversation, and its receipt: the sections the plugins
 * contribute (the built-in `core` plugin: summary, traits, the memories most relevant to the latest
 * user message), rendered within the token budget. It only reads: the injection stage notes what was
 * used, and the console's preview shows what a message would get without anything noted.
 */
export const contextBlock = Effect.fnUntraced(function* (
  messages: ReadonlyArray<ChatMessage>,
  snapshot: ProfileSnapshot,
  definitions: ReadonlyMap<string, TraitDefinition>,
  now: number
) {
  const config = yield* RetrievalConfig
  const host = yield* PluginHost
  const query = conversationQueryOf(messages)
  const latest = query.latest
  const retrieved = yield* (yield* Retrieval).forInjection(snapshot.memories, query, now)
  const sections = yield* host.inject({
    profile: snapshot.profile,
    traits: snapshot.traits,
    memories: retrieved.memories.map(rankedOf),
    definitions,
    valueTypes: host.valueTypes,
    latestUserText: latest
  })
  const rendered = renderSections(sections, config.injection.maxTokens)
  const receipt = {
    skipped: false,
    ...coreInjected(rendered.included),
    plugins: [...new Set(rendered.included.map((section) => section.plugin))],
    estimatedTokens: rendered.estimatedTokens,
    retrieval: retrieved.mode,
    semantic: retrieved.semantic
  } satisfies InjectionReceipt
  return { context: rendered.text, receipt }
})

/** The receipt of a block that was rendered, as the `X-Service-Context` header and the console's preview show it. */
export const renderedReceiptJson = (
  profileId: string,
  receipt: Extract<InjectionReceipt, { readonly skipped: false }>
): RenderedReceipt => ({
  profileId,
  summary: receipt.summary,
  traits: receipt.traits,
  memories: receipt.memories,
  plugins: receipt.plugins,
  estimatedTokens: receipt.estimatedTokens,
  retrieval: receipt.retrieval,
  ...(receipt.semantic === "used" || receipt.semantic === "off" ? {} : { semantic: receipt.semantic })
})

/** Any receipt as the `X-Service-Context` header shows it. */
export const receiptJson = (profileId: string | null, receipt: InjectionReceipt | "unavailable") =>
  receipt === "unavailable"
    ? { profileId, memory: "unavailable" }
    : receipt.skipped || profileId === null
      ? { profileId, skipped: true }
      : renderedReceiptJson(profileId, receipt)
