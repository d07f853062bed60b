import { Effect } from "effect"
import type { Trait } from "../../domain/Trait.ts"
import type { TraitDefinition } from "../../domain/TraitDefinition.ts"
import type { IncludedSection } from "../Plugin.ts"
import { type ContextSection, definePlugin, type RankedMemory, type ValueType } from "../Plugin.ts"
import { builtinValueTypes } from "./valueTypes.ts"

/** Manual traits are always shown; extracted ones only when the extractor was fairly sure. */
export const MIN_INJECTED_CONFIDENCE = 0.5

const CORE = "core"
const SUMMARY_SECTION = "Summary"
const TRAITS_SECTION = "Traits"
const MEMORIES_SECTION = "Memories"
const SHARED_SECTION = "What this app knows"

/** What of the profile made it into the block: the receipt's figures, and the memories whose use is noted. */
export interface CoreInjected {
  readonly summary: boolean
  readonly traits: ReadonlyArray<string>
  readonly memories: ReadonlyArray<string>
  /** The namespace's shared memories (its app's knowledge, not the user's). */
  readonly sharedMemories: ReadonlyArray<string>
}

/** Reads the core plugin's own sections back out of what fitted in the block. */
export const coreInjected = (included: ReadonlyArray<IncludedSection>): CoreInjected => {
  const ids = (title: string) =>
    included.find((section) => section.plugin === CORE && section.title === title)?.ids ?? []
  return {
    summary: ids(SUMMARY_SECTION).length > 0,
    traits: ids(TRAITS_SECTION),
    memories: ids(MEMORIES_SECTION),
    sharedMemories: ids(SHARED_SECTION)
  }
}

/** Fills `{{value}}` everywhere in the template (split/join: no `$&`-style replacement patterns). */
export const renderTrait = (
  trait: Pick<Trait, "key" | "value" | "valueType">,
  definition: TraitDefinition | undefined,
  valueTypes: ReadonlyMap<string, ValueType>
): string => {
  const template = definition?.injectionTemplate ?? `${trait.key}: {{value}}`
  const render = valueTypes.get(definition?.valueType ?? trait.valueType)?.render ?? String
  const value = render(trait.value)
  return template.includes("{{value}}") ? template.split("{{value}}").join(value) : `${template} ${value}`
}

/** A ranked memory as a line: an event's date lets the model answer "when did I…", and so on. */
const memoryLine = (memory: RankedMemory) => ({
  id: memory.id,
  text: `(${
    memory.occurredOn !== undefined
      ? `${memory.type}, ${memory.occurredOn}`
      : memory.rememberedOn !== undefined
        ? `${memory.type}, as of ${memory.rememberedOn}`
        : memory.type
  }) ${memory.content}`
})

/**
 * The gateway's own behaviour, built with the same API as every other plugin: the built-in trait value
 * types, and the summary, traits (through their injection templates), ranked memories and the app's
 * relevant shared knowledge (in a section of its own, after the user's) as context sections.
 */
export const corePlugin = definePlugin({
  name: CORE,
  required: true,
  valueTypes: builtinValueTypes,
  hooks: {
    inject: (context) =>
      Effect.sync(() => {
        const sections: Array<ContextSection> = []
        if (context.profile.summary !== null && context.profile.summary.trim() !== "") {
          sections.push({
            title: SUMMARY_SECTION,
            items: [{ id: "summary", text: context.profile.summary }],
            priority: 300,
            inline: true,
            maxShare: 0.5
          })
        }
        const traits = context.traits
          .filter((trait) => trait.source === "manual" || trait.confidence >= MIN_INJECTED_CONFIDENCE)
          .filter((trait) => context.definitions.get(trait.key)?.injectionEnabled ?? true)
          .map((trait) => ({
            id: trait.key,
            text: renderTrait(trait, context.definitions.get(trait.key), context.valueTypes)
          }))
        if (traits.length > 0) sections.push({ title: TRAITS_SECTION, items: traits, priority: 200 })
        // An event's date lets the model answer "when did I…" and tell old news from new; so does
        // the date a memory was remembered when another one may have changed it.
        const memories = context.memories.map(memoryLine)
        if (memories.length > 0) sections.push({ title: MEMORIES_SECTION, items: memories, priority: 100 })
        // The user's own profile comes first when the budget is short.
        const shared = context.sharedMemories.map(memoryLine)
        if (shared.length > 0) sections.push({ title: SHARED_SECTION, items: shared, priority: 90 })
        return sections
      })
  }
})
