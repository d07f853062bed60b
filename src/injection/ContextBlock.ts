import { Context, Effect, Layer } from "effect"
import type { TraitDefinition } from "../domain/TraitDefinition.ts"
import { coreInjected } from "../plugins/builtin/core.ts"
import type { PluginRejection } from "../plugins/Plugin.ts"
import { type PluginFailed, PluginHost } from "../plugins/PluginHost.ts"
import type { ChatMessage } from "../providers/openai/chat.ts"
import { conversationQueryOf } from "../retrieval/conversationQuery.ts"
import { type MemoryAccept, Retrieval } from "../retrieval/Retrieval.ts"
import { RetrievalConfig } from "../retrieval/RetrievalConfig.ts"
import type { ScoredMemory } from "../retrieval/scoreMemories.ts"
import { statesTime } from "../retrieval/timeMentions.ts"
import type { ProfileSnapshot } from "../snapshots/SnapshotsRepo.ts"
import type { RenderedInjection } from "./receipt.ts"
import { renderSections } from "./renderContext.ts"

/** A rendered context block: its text (none when there is nothing to say) and its receipt. */
export interface RenderedBlock {
  readonly context: string | undefined
  readonly receipt: RenderedInjection
}

/**
 * A scored memory as plugins see it. Its date goes with it where a "when" may hang on it: when it
 * happened, else — for an event, a memory saying "yesterday" or "for three years", or one of two values
 * of a changed fact — when it was remembered.
 */
const rankedOf = ({ changedFact, memory, score }: ScoredMemory) => ({
  id: memory.id,
  content: memory.content,
  type: memory.type,
  score,
  occurredOn: memory.occurredAt === null ? undefined : dayOf(memory.occurredAt),
  rememberedOn:
    changedFact === true || (memory.occurredAt === null && (memory.type === "event" || statesTime(memory.content)))
      ? dayOf(memory.createdAt)
      : undefined
})

const dayOf = (at: number) => new Date(at).toISOString().slice(0, 10)

/**
 * The context block for a profile and a conversation, and its receipt: the sections the plugins
 * contribute (the built-in `core` plugin: summary, traits, the memories most relevant to the latest
 * user message, and those of the namespace's shared knowledge that are relevant to it), rendered
 * within the token budget. It only reads: the injection stage notes what was used, and the console's
 * preview shows what a message would get without anything noted.
 */
export class ContextBlock extends Context.Service<
  ContextBlock,
  {
    readonly render: (
      messages: ReadonlyArray<ChatMessage>,
      snapshot: ProfileSnapshot,
      definitions: ReadonlyMap<string, TraitDefinition>,
      now: number,
      /** Only memories this accepts (`service.memoryFilter`). */
      accept?: MemoryAccept | undefined,
      /** Lines the request carries already (earlier turns' blocks put back): not written twice. */
      shown?: ReadonlySet<string>,
      /** The namespace's shared knowledge: its memories relevant to the conversation go in their own section. */
      shared?: ProfileSnapshot | undefined
    ) => Effect.Effect<RenderedBlock, PluginRejection | PluginFailed>
  }
>()("gateway/injection/ContextBlock") {
  static readonly layer = Layer.effect(
    ContextBlock,
    Effect.gen(function* () {
      const config = yield* RetrievalConfig
      const host = yield* PluginHost
      const retrieval = yield* Retrieval

      // Untraced: it runs inside the injection stage's span, or the preview's.
      const render = Effect.fnUntraced(function* (
        messages: ReadonlyArray<ChatMessage>,
        snapshot: ProfileSnapshot,
        definitions: ReadonlyMap<string, TraitDefinition>,
        now: number,
        accept?: MemoryAccept | undefined,
        shown?: ReadonlySet<string>,
        shared?: ProfileSnapshot | undefined
      ) {
        const query = conversationQueryOf(messages)
        // The shared memories are ranked however few (only what answers the message goes), beside the
        // user's own; a namespace without any costs nothing.
        const [retrieved, sharedRanked] = yield* Effect.all(
          [
            retrieval.forInjection(snapshot.memories, query, now, accept),
            shared === undefined || shared.memories.memories.length === 0
              ? Effect.succeed(undefined)
              : retrieval.relevant(shared.memories, query, now, accept)
          ],
          { concurrency: 2 }
        )
        const sharedMemories = sharedRanked === undefined ? [] : sharedRanked.memories.map(rankedOf)
        const sections = yield* host.inject({
          profile: snapshot.profile,
          traits: snapshot.traits,
          memories: retrieved.memories.map(rankedOf),
          sharedMemories,
          definitions,
          valueTypes: host.valueTypes,
          latestUserText: query.latest
        })
        const rendered = renderSections(sections, config.injection.maxTokens, shown)
        const receipt: RenderedInjection = {
          skipped: false,
          ...coreInjected(rendered.included),
          plugins: [...new Set(rendered.included.map((section) => section.plugin))],
          estimatedTokens: rendered.estimatedTokens,
          retrieval: retrieved.mode,
          semantic: retrieved.semantic
        }
        return { context: rendered.text, receipt }
      })

      return ContextBlock.of({ render })
    })
  ).pipe(Layer.provide([Retrieval.layer]))
}
