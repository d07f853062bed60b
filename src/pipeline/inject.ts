import { Effect } from "effect"
import { Background } from "../background/Background.ts"
import { AppConfig } from "../config/AppConfig.ts"
import { injectContext, latestUserText } from "../context/injectContext.ts"
import { renderSections } from "../context/renderContext.ts"
import type { Profile } from "../domain/Profile.ts"
import { MEMORIES_SECTION, SUMMARY_SECTION, TRAITS_SECTION } from "../plugins/builtin/core.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { ContextStore } from "../store/ContextStore.ts"
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
export const inject = Effect.fn("pipeline.inject")(function*(
  request: ChatRequest,
  profile: Profile,
  definitions: ReadonlyMap<string, TraitDefinition>
) {
  if (request.skipInjection) {
    return { messages: request.messages, receipt: { skipped: true } as InjectionReceipt }
  }
  const config = yield* AppConfig
  const contextStore = yield* ContextStore
  const host = yield* PluginHost
  const latest = latestUserText(request.messages)
  const { memories, traits } = yield* contextStore.load(profile.id, latest)
  const sections = yield* host.inject({
    profile,
    traits,
    memories,
    definitions,
    valueTypes: host.valueTypes,
    latestUserText: latest
  })
  const rendered = renderSections(sections, config.injection.maxTokens)
  const core = (title: string) => rendered.included.find((s) => s.plugin === "core" && s.title === title)?.ids ?? []
  const memoryIds = core(MEMORIES_SECTION)
  if (memoryIds.length > 0) {
    const background = yield* Background
    yield* background.run("touch-memories", contextStore.touch(memoryIds))
  }
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
