import { Schema } from "effect"
import { Tool, Toolkit } from "effect/ai"
import { Cues, Importance, MemoryContent, MemoryMetadata, MemoryTags, MemoryType } from "../domain/Memory.ts"
import { isStorableJsonValue } from "../domain/storableText.ts"
import { Confidence, TraitKey } from "../domain/Trait.ts"
import { SearchLimit, SearchQuery } from "../memories/searchRequest.ts"
import { MemoryFilter } from "../retrieval/memoryFilter.ts"
import { ConnectionProfile } from "./ConnectionProfile.ts"

/**
 * The MCP server's tools: what an agent may read and change of the connection's profile. Parameters
 * follow the management API's rules (the same schemas), and a refusal carries the code the API gives.
 */

/** A refusal, as the tool's error result: `<code>: <message>`, the code and message the management API gives. */
export class ToolError extends Schema.TaggedError<ToolError>()("ToolError", {
  code: Schema.String,
  message: Schema.String
}) {}

/** A memory as the tools show it. */
const MemoryView = Schema.Struct({
  id: Schema.String,
  content: Schema.String,
  type: MemoryType,
  importance: Schema.Finite,
  cues: Schema.Array(Schema.String),
  tags: Schema.Array(Schema.String),
  metadata: Schema.Record(Schema.String, Schema.Unknown),
  createdAt: Schema.String
})

const TraitView = Schema.Struct({
  key: Schema.String,
  value: Schema.Json,
  valueType: Schema.String,
  source: Schema.String,
  confidence: Schema.Finite
})

/** Every tool works on the connection's profile and refuses with a `ToolError`. */
const common = () => ({ failure: ToolError, dependencies: [ConnectionProfile] })

export const SearchMemories = Tool.make("search_memories", {
  description:
    "Search what is remembered about the user: their memories ranked for a text, best first, " +
    "exactly as the gateway ranks them for injection. `relevant` marks those it would inject.",
  parameters: Schema.Struct({
    query: SearchQuery,
    limit: Schema.optionalKey(SearchLimit),
    type: Schema.optionalKey(MemoryType),
    filter: Schema.optionalKey(MemoryFilter)
  }),
  success: Schema.Struct({
    memories: Schema.Array(Schema.Struct({ ...MemoryView.fields, score: Schema.Finite, relevant: Schema.Boolean }))
  }),
  ...common()
})

/** The app's own labels and fields on a memory, as the management API takes them (the same schemas). */
const labels = {
  tags: Schema.optionalKey(
    MemoryTags.annotate({
      description: "The app's own labels (e.g. work, personal): up to 20, each 1–64 of A-Z a-z 0-9 _ . : / -"
    })
  ),
  metadata: Schema.optionalKey(
    MemoryMetadata.annotate({ description: "The app's own fields: up to 20 keys of strings, numbers or booleans" })
  )
}

export const AddMemory = Tool.make("add_memory", {
  description:
    "Remember something about the user: a fact, preference, event or context, with an importance from 0 " +
    "to 1 (0.5 when not given), optional cues (topics in which it matters; written for it in the background when not given), " +
    "and optional tags and metadata (the app's own labels and fields, which memory filters select on).",
  parameters: Schema.Struct({
    content: MemoryContent,
    type: MemoryType,
    importance: Schema.optionalKey(Importance),
    cues: Schema.optionalKey(Cues),
    ...labels
  }),
  success: Schema.Struct({ memory: MemoryView }),
  ...common()
})

export const UpdateMemory = Tool.make("update_memory", {
  description:
    "Change one of the user's memories (its id from search_memories): its content, type, importance, cues, " +
    "tags or metadata (tags and metadata are replaced as a whole).",
  parameters: Schema.Struct({
    id: Schema.String,
    content: Schema.optionalKey(MemoryContent),
    type: Schema.optionalKey(MemoryType),
    importance: Schema.optionalKey(Importance),
    cues: Schema.optionalKey(Cues),
    ...labels
  }),
  success: Schema.Struct({ memory: MemoryView }),
  ...common()
})

export const DeleteMemory = Tool.make("delete_memory", {
  description: "Forget one of the user's memories (its id from search_memories).",
  parameters: Schema.Struct({ id: Schema.String }),
  success: Schema.Struct({ deleted: Schema.Literal(true) }),
  ...common()
})

export const GetProfile = Tool.make("get_profile", {
  description: "What the gateway knows of the user: the summary and the traits.",
  success: Schema.Struct({
    externalId: Schema.String,
    summary: Schema.NullOr(Schema.String),
    summaryVersion: Schema.Int,
    traits: Schema.Array(TraitView)
  }),
  ...common()
})

export const SetTrait = Tool.make("set_trait", {
  description:
    "Set one of the user's traits by hand (source manual, kept when the gateway learns from conversations). " +
    "The value must fit the trait's type: an enum trait takes one of its values.",
  parameters: Schema.Struct({
    key: TraitKey,
    value: Schema.Json.check(isStorableJsonValue),
    confidence: Schema.optionalKey(Confidence)
  }),
  success: Schema.Struct({ trait: TraitView }),
  ...common()
})

export const ProfileTools = Toolkit.make(SearchMemories, AddMemory, UpdateMemory, DeleteMemory, GetProfile, SetTrait)
