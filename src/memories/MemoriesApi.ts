import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  Cues,
  Importance,
  IsoInstant,
  Memory,
  MemoryContent,
  MemoryMetadata,
  MemoryTags,
  MemoryType
} from "../domain/Memory.ts"
import { CategoryName } from "../domain/NamespaceSettings.ts"
import { ApiValidation } from "../http/ApiValidation.ts"
import { Limit, Offset, ProfileRef, Success } from "../http/apiFields.ts"
import { BadRequest, NotFound } from "../http/OpenAiError.ts"
import { MemoryFilter } from "../retrieval/memoryFilter.ts"
import { DEFAULT_SEARCH_RESULTS, SearchLimit, SearchQuery } from "./searchRequest.ts"

export class MemoryCreated extends Schema.Class<MemoryCreated>("MemoryCreated")(
  { memory: Memory },
  { httpApiStatus: 201, description: "The memory was stored" }
) {}

export class MemoryFound extends Schema.Class<MemoryFound>("MemoryFound")(
  { memory: Memory },
  {
    description:
      "The profile has this memory already (the same type and text, whatever the case and spacing): " +
      "nothing was stored, and this is the one it has"
  }
) {}

const Supersedes = Schema.Array(Schema.String)
  .check(Schema.isMaxLength(100))
  .annotate({
    description:
      "Ids of this profile's memories that the new one replaces (a fact that changed): they stay " +
      "in listings and exports, marked `supersededBy`, but are never injected again"
  })

const MemoryCues = Cues.annotate({
  description:
    'Situations and topics in which the memory matters, e.g. ["dinner ideas", "restaurants"] for ' +
    '"is vegetarian": the memory is found by them too (they are never injected). Left out, the extraction model ' +
    "writes them in the background (EXTRACTION_WRITE_CUES); an empty list means none"
})

const MemoryCategoryField = CategoryName.annotate({
  description: "One of the namespace's memory categories (`/api/namespaces/{name}/settings`)"
})

const MemoryExpiry = Schema.NullOr(IsoInstant).annotate({
  description:
    "When the retention sweep removes it; `null`: never. Left out, its namespace's retention policy for its type decides"
})

const NewMemoryFields = {
  content: MemoryContent,
  cues: Schema.optionalKey(MemoryCues),
  type: MemoryType,
  importance: Schema.optionalKey(Importance),
  occurredAt: Schema.optionalKey(IsoInstant.annotate({ description: "When the remembered thing happened (events)" })),
  supersedes: Schema.optionalKey(Supersedes),
  tags: Schema.optionalKey(MemoryTags.annotate({ description: "The app's own labels (e.g. work, personal)" })),
  metadata: Schema.optionalKey(
    MemoryMetadata.annotate({ description: "The app's own fields: up to 20 keys of strings, numbers or booleans" })
  ),
  category: Schema.optionalKey(MemoryCategoryField),
  expiresAt: Schema.optionalKey(MemoryExpiry)
}

/** A change to a memory: any of its fields (`null` clears a time or a category; `expiresAt: null`: never). */
export const MemoryChangesBody = Schema.Struct({
  content: Schema.optionalKey(MemoryContent),
  cues: Schema.optionalKey(MemoryCues),
  type: Schema.optionalKey(MemoryType),
  importance: Schema.optionalKey(Importance),
  occurredAt: Schema.optionalKey(Schema.NullOr(IsoInstant)),
  tags: Schema.optionalKey(MemoryTags),
  metadata: Schema.optionalKey(MemoryMetadata),
  category: Schema.optionalKey(Schema.NullOr(MemoryCategoryField)),
  expiresAt: Schema.optionalKey(MemoryExpiry)
})
export type MemoryChangesBody = typeof MemoryChangesBody.Type

/** A memory as an import brings it: a new one, with its original creation time if it has one. */
export const ImportedMemory = Schema.Struct({
  ...NewMemoryFields,
  createdAt: Schema.optionalKey(IsoInstant.annotate({ description: "The original creation time (not in the future)" }))
})

/** The most memories one import call takes. */
export const MAX_IMPORT = 1000

export class MemoriesImported extends Schema.Class<MemoriesImported>("MemoriesImported")(
  {
    memories: Schema.Array(Memory).annotate({ description: "The memories stored, in the order given" }),
    duplicates: Schema.Int.annotate({
      description:
        "How many were not stored: the profile had them already (the same type and text, whatever the case " +
        "and spacing), or the import repeated them"
    })
  },
  { httpApiStatus: 201 }
) {}

export const ScoreParts = Schema.Struct({
  semantic: Schema.NullOr(Schema.Finite).annotate({
    description:
      "Cosine similarity of message and memory; null when the memory has no vector yet or the message had none (retrieval.semantic says why: not_needed when the keywords alone were confident)"
  }),
  keyword: Schema.Finite.annotate({ description: "Normalised BM25, in [0, 1]" }),
  relevance: Schema.Finite.annotate({
    description:
      "The probability compared with the floor: the score, or with a vector the larger of it and the keyword-only probability"
  }),
  time: Schema.Finite.annotate({
    description: "1 when the memory happened in the period the message names (less for long periods), else 0"
  }),
  importance: Schema.Finite.annotate({ description: "importance × decay factor" }),
  recency: Schema.Finite.annotate({ description: "0.5^(age / MEMORY_RECENCY_HALF_LIFE_DAYS)" })
}).annotate({ description: "What the ranking model read of the memory" })

export const SearchResult = Schema.Struct({
  ...Memory.fields,
  score: Schema.Finite,
  /** Above the relevance floor: injection would consider it. */
  relevant: Schema.Boolean,
  /** Injection would take it (the token budget and the best score decide how many of the relevant ones). */
  injected: Schema.Boolean,
  scoreParts: ScoreParts
})

export const RetrievalInfo = Schema.Struct({
  mode: Schema.Literals(["fused", "keyword"]),
  semantic: Schema.Literals(["used", "off", "no_vectors", "not_needed", "timeout", "failed"]),
  period: Schema.NullOr(Schema.Struct({ from: Schema.DateTimeUtc, to: Schema.DateTimeUtc, phrase: Schema.String })),
  unembedded: Schema.Int.annotate({
    description: "The profile's memories without a vector yet: found by keywords alone until their embed job runs"
  })
})

/** A search: the message to rank for, and which memories and when. */
export const SearchBody = Schema.Struct({
  query: SearchQuery,
  limit: Schema.optionalKey(SearchLimit),
  type: Schema.optionalKey(MemoryType),
  filter: Schema.optionalKey(
    MemoryFilter.annotate({
      description: "Only memories with one of (tags.any) or all of (tags.all) these tags and these metadata values"
    })
  ),
  at: Schema.optionalKey(
    IsoInstant.annotate({
      description: "Rank as of this moment (time phrases, recency and decay are read against it); default now"
    })
  )
})

/** `/api/profiles/{id}/memories`: a profile's memories, written by hand, imported, ranked. */
export class MemoriesGroup extends HttpApiGroup.make("memories")
  .add(
    HttpApiEndpoint.get("list", "/:id/memories", {
      params: ProfileRef,
      query: {
        type: Schema.optionalKey(MemoryType),
        category: Schema.optionalKey(CategoryName),
        limit: Schema.optionalKey(Limit),
        offset: Schema.optionalKey(Offset)
      },
      success: Schema.Struct({ memories: Schema.Array(Memory), total: Schema.Int }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List memories",
        description:
          "Sorted by importance × decayFactor, then newest first, a page at a time; `total` counts them all (of " +
          "`type` and `category`, when given). Superseded memories are listed too (`supersededBy` set)."
      })
    ),
    HttpApiEndpoint.post("create", "/:id/memories", {
      params: ProfileRef,
      payload: Schema.Struct(NewMemoryFields),
      success: [MemoryCreated, MemoryFound],
      error: [NotFound, BadRequest]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Add a memory",
        description:
          "Create a memory by hand; it is embedded (and, without `cues`, given cues) in the background. " +
          "`supersedes` names the memories it replaces. A user id the gateway does not know gets its profile " +
          "created, as `/v1` creates it (a UUID names an existing profile only). A memory the profile has " +
          "already (the same type and text, whatever the case and spacing) is not stored again: 200 with that one."
      })
    ),
    HttpApiEndpoint.patch("update", "/:id/memories/:memoryId", {
      params: { ...ProfileRef, memoryId: Schema.String },
      payload: MemoryChangesBody,
      success: Schema.Struct({ memory: Memory }),
      error: [NotFound, BadRequest]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Edit a memory",
        description:
          "Change a memory's content, cues, type, importance, time (`occurredAt: null` clears it), labels, " +
          "category (`null` clears it) or expiry (`expiresAt: null`: never). " +
          "A new text or new cues are embedded again; a new text on a memory without cues gets cues written in the background."
      })
    ),
    HttpApiEndpoint.post("import", "/:id/memories/import", {
      params: ProfileRef,
      payload: Schema.Struct({
        memories: Schema.Array(ImportedMemory).check(Schema.isBetweenLength(1, MAX_IMPORT))
      }),
      success: MemoriesImported,
      error: [NotFound, BadRequest]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Import memories",
        description:
          `Add up to ${MAX_IMPORT} memories in one transaction (all or none), e.g. from another memory store; ` +
          "they are embedded in the background. The profile is created if new, as for one memory. Memories " +
          "the profile has already, and repeats within the import, are left out and counted in `duplicates`."
      })
    ),
    HttpApiEndpoint.post("search", "/:id/memories/search", {
      params: ProfileRef,
      payload: SearchBody,
      success: Schema.Struct({ memories: Schema.Array(SearchResult), retrieval: RetrievalInfo }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Rank memories as injection does",
        description:
          "Rank the profile's current memories for a message exactly as injection does, with each score's parts. " +
          "`score` is the probability that the memory answers the message; " +
          `\`relevant\` marks those at or above the relevance floor; \`limit\` defaults to ${DEFAULT_SEARCH_RESULTS}.`
      })
    ),
    HttpApiEndpoint.delete("remove", "/:id/memories/:memoryId", {
      params: { ...ProfileRef, memoryId: Schema.String },
      success: Success,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Delete a memory" }))
  )
  .prefix("/api/profiles")
  .middleware(ApiValidation)
  .annotateMerge(
    OpenApi.annotations({ description: "What the gateway remembers about a user, ranked as injection ranks it" })
  ) {}
