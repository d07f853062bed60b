import { Schema, Struct } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Memory, MemoryType } from "../domain/Memory.ts"
import { ApiValidation } from "../http/ApiValidation.ts"
import { Limit, Offset, Success } from "../http/apiFields.ts"
import { BadRequest, Forbidden, NotFound } from "../http/OpenAiError.ts"
import {
  ImportedMemory,
  MAX_IMPORT,
  MemoriesImported,
  MemoryChangesBody,
  MemoryCreated,
  MemoryFound,
  RetrievalInfo,
  SearchBody,
  SearchResult
} from "./MemoriesApi.ts"
import { DEFAULT_SEARCH_RESULTS } from "./searchRequest.ts"

/** A new memory's fields: those of a user's memory (`POST /api/profiles/{id}/memories`). */
const NewSharedMemory = Schema.Struct(Struct.omit(ImportedMemory.fields, ["createdAt"]))

const NamespaceName = { name: Schema.String }
const SharedMemoryRef = { ...NamespaceName, memoryId: Schema.String }

/** Refused before anything is read: another namespace than the key's own (403), a name that is not one (400). */
const refused = [BadRequest, Forbidden]

/**
 * `/api/namespaces/{name}/memories`: what an app knows for all its users (its products, its policies),
 * remembered once and injected for every user of the namespace where it answers the message. The
 * shapes are those of a user's memories (`memories/MemoriesApi.ts`).
 */
export class SharedMemoriesGroup extends HttpApiGroup.make("sharedMemories")
  .add(
    HttpApiEndpoint.get("list", "/:name/memories", {
      params: NamespaceName,
      query: {
        type: Schema.optionalKey(MemoryType),
        limit: Schema.optionalKey(Limit),
        offset: Schema.optionalKey(Offset)
      },
      success: Schema.Struct({ memories: Schema.Array(Memory), total: Schema.Int }),
      error: refused
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List a namespace's shared memories",
        description:
          "Sorted by importance × decayFactor, then newest first, a page at a time; `total` counts them all (of " +
          "`type`, when given). Superseded memories are listed too (`supersededBy` set). A namespace without " +
          "shared memories lists none."
      })
    ),
    HttpApiEndpoint.post("create", "/:name/memories", {
      params: NamespaceName,
      payload: NewSharedMemory,
      success: [MemoryCreated, MemoryFound],
      error: refused
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Add a shared memory",
        description:
          "Something the app knows for all its users (a product, a policy): injected for every user of the " +
          "namespace where it is relevant to their message, in a section of its own (`service.sharedMemories: " +
          "false` leaves it out). The fields are a user's memory's; it is embedded (and, without `cues`, given cues) " +
          "in the background. A memory the namespace has already (the same type and text, whatever the case and " +
          "spacing) is not stored again: 200 with that one. The global admin's key acts on every namespace, a " +
          "namespace's admin key on its own (403 `namespace_not_allowed`)."
      })
    ),
    HttpApiEndpoint.get("get", "/:name/memories/:memoryId", {
      params: SharedMemoryRef,
      success: Schema.Struct({ memory: Memory }),
      error: [NotFound, ...refused]
    }).annotateMerge(OpenApi.annotations({ summary: "Get a shared memory" })),
    HttpApiEndpoint.patch("update", "/:name/memories/:memoryId", {
      params: SharedMemoryRef,
      payload: MemoryChangesBody,
      success: Schema.Struct({ memory: Memory }),
      error: [NotFound, ...refused]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Edit a shared memory",
        description:
          "Change a shared memory's content, cues, type, importance or time (`occurredAt: null` clears it), as a " +
          "user's memory is changed."
      })
    ),
    HttpApiEndpoint.post("import", "/:name/memories/import", {
      params: NamespaceName,
      payload: Schema.Struct({
        memories: Schema.Array(ImportedMemory).check(Schema.isBetweenLength(1, MAX_IMPORT))
      }),
      success: MemoriesImported,
      error: refused
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Import shared memories",
        description:
          `Add up to ${MAX_IMPORT} shared memories in one transaction (all or none), e.g. the app's catalogue; ` +
          "they are embedded in the background. Memories the namespace has already, and repeats within the " +
          "import, are left out and counted in `duplicates`."
      })
    ),
    HttpApiEndpoint.post("search", "/:name/memories/search", {
      params: NamespaceName,
      payload: SearchBody,
      success: Schema.Struct({ memories: Schema.Array(SearchResult), retrieval: RetrievalInfo }),
      error: refused
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Rank shared memories as injection does",
        description:
          "Rank the namespace's current shared memories for a message exactly as injection does, with each " +
          "score's parts; only those marked `relevant` (at or above the relevance floor) would be injected. " +
          `\`limit\` defaults to ${DEFAULT_SEARCH_RESULTS}.`
      })
    ),
    HttpApiEndpoint.delete("remove", "/:name/memories/:memoryId", {
      params: SharedMemoryRef,
      success: Success,
      error: [NotFound, ...refused]
    }).annotateMerge(OpenApi.annotations({ summary: "Delete a shared memory" }))
  )
  .prefix("/api/namespaces")
  .middleware(ApiValidation)
  .annotateMerge(
    OpenApi.annotations({
      description: "What an app knows for all its users, injected for each of them where it is relevant"
    })
  ) {}
