import { Effect } from "effect"
import { injectContext, latestUserText } from "../context/injectContext.ts"
import { type ContextTrait, renderContext } from "../context/renderContext.ts"
import type { Profile } from "../domain/Profile.ts"
import { Background } from "../background/Background.ts"
import { AppConfig } from "../config/AppConfig.ts"
import { ContextStore } from "../store/ContextStore.ts"
import type { TraitDefinition } from "../traits/TraitDefinition.ts"
import type { ChatMessage, ChatRequest } from "./ChatRequest.ts"

/** Manual traits are always shown; extracted ones only when the extractor was fairly sure. */
export const MIN_INJECTED_CONFIDENCE = 0.5

/** What was injected, reported to the caller in the `X-Service-Context` header. */
export type InjectionReceipt =
  | { readonly skipped: true }
  | {
    readonly skipped: false
    readonly summary: boolean
    readonly traits: ReadonlyArray<string>
    readonly memories: ReadonlyArray<string>
    readonly estimatedTokens: number
  }

/**
 * Adds what is known about the user to the system message: the summary, the traits the schema
 * in effect lets through, and the memories most relevant to the latest user message.
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
  const { memories, traits } = yield* contextStore.load(profile.id, latestUserText(request.messages))
  const shown: Array<ContextTrait> = traits
    .filter((trait) => trait.source === "manual" || trait.confidence >= MIN_INJECTED_CONFIDENCE)
    .map((trait) => ({ key: trait.key, value: trait.value, definition: definitions.get(trait.key) }))
    .filter((trait) => trait.definition?.injectionEnabled ?? true)
  const rendered = renderContext({
    summary: profile.summary,
    traits: shown,
    memories,
    maxTokens: config.injection.maxTokens
  })
  if (rendered.memoryIds.length > 0) {
    const background = yield* Background
    yield* background.run("touch-memories", contextStore.touch(rendered.memoryIds))
  }
  const messages: ReadonlyArray<ChatMessage> = rendered.text === undefined
    ? request.messages
    : injectContext(request.messages, rendered.text)
  const receipt: InjectionReceipt = {
    skipped: false,
    summary: rendered.summary,
    traits: rendered.traitKeys,
    memories: rendered.memoryIds,
    estimatedTokens: rendered.estimatedTokens
  }
  return { messages, receipt }
})
