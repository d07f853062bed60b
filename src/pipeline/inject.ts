import { Effect } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import { injectContext, latestUserText } from "../context/injectContext.ts"
import { lexemesOf } from "../context/lexemes.ts"
import { rankMemories } from "../context/rankMemories.ts"
import { renderSections } from "../context/renderContext.ts"
import { MEMORIES_SECTION, SUMMARY_SECTION, TRAITS_SECTION } from "../plugins/builtin/core.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import type { ProfileSnapshot } from "../store/ContextStore.ts"
import { MemoryAccess } from "../store/MemoryAccess.ts"
import type { TraitDefinition } from "../traits/TraitDefinition.ts"
import type { ChatMessage, ChatRequest } from "./ChatRequest.ts"

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
  }

/**
 * Adds what is known about the user to the system message: the sections the plugins contribute
 * (the built-in `core` plugin: summary, traits, the memories most relevant to the latest user
 * message), rendered within the token budget.
 */
export const inject = Effect.fnUntraced(function*(
  request: ChatRequest,
  snapshot: ProfileSnapshot,
  definitions: ReadonlyMap<string, TraitDefinition>
) {
  if (request.skipInjection) {
    return { messages: request.messages, receipt: { skipped: true } as InjectionReceipt }
  }
  const config = yield* AppConfig
  const host = yield* PluginHost
  const { profile } = snapshot
  const latest = latestUserText(request.messages)
  const lexemes = snapshot.memories.length === 0 ? new Set<string>() : lexemesOf(latest)
  const now = Date.now()
  const memories = rankMemories(snapshot.memories, lexemes, config.injection, config.memoryHalfLifeDays, now)
  const sections = yield* host.inject({
    profile,
    traits: snapshot.traits,
    memories,
    definitions,
    valueTypes: host.valueTypes,
    latestUserText: latest
  })
  const rendered = renderSections(sections, config.injection.maxTokens)
  const core = (title: string) => rendered.included.find((s) => s.plugin === "core" && s.title === title)?.ids ?? []
  const memoryIds = core(MEMORIES_SECTION)
  if (memoryIds.length > 0) yield* (yield* MemoryAccess).note(profile.id, memoryIds, now)
  const messages: ReadonlyArray<ChatMessage> = rendered.text === undefined
    ? request.messages
    : injectContext(request.messages, rendered.text)
  const receipt: InjectionReceipt = {
    skipped: false,
    summary: core(SUMMARY_SECTION).length > 0,
    traits: core(TRAITS_SECTION),
    memories: memoryIds,
    plugins: [...new Set(rendered.included.map((section) => section.plugin))],
    estimatedTokens: rendered.estimatedTokens
  }
  return { messages, receipt }
})
