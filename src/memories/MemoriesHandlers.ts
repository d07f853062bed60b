import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { instantOf } from "../domain/Memory.ts"
import { pageSize } from "../http/apiFields.ts"
import { BadRequest, toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { Memories, type MemoryChanges } from "./Memories.ts"
import { MemoriesGroup, MemoriesImported, MemoryCreated, MemoryFound } from "./MemoriesApi.ts"
import { MemorySearch } from "./MemorySearch.ts"

const optionalInstant = (text: string | undefined) => (text === undefined ? undefined : instantOf(text))

export const MemoriesHandlers = HttpApiBuilder.group(
  sliceApi(MemoriesGroup),
  "memories",
  Effect.fn(function* (handlers) {
    const profiles = yield* Profiles
    const memories = yield* Memories
    const memorySearch = yield* MemorySearch

    return handlers
      .handle("list", ({ params, query }) =>
        memories
          .list(params.id, {
            type: query.type,
            limit: pageSize(query.limit),
            offset: query.offset ?? 0
          })
          .pipe(Effect.mapError(toApiError))
      )
      .handle("create", ({ params, payload }) =>
        memories
          .addOnce(params.id, {
            content: payload.content,
            type: payload.type,
            importance: payload.importance,
            cues: payload.cues,
            occurredAt: optionalInstant(payload.occurredAt),
            supersedes: payload.supersedes,
            tags: payload.tags,
            metadata: payload.metadata
          })
          .pipe(
            Effect.map(({ created, memory }) =>
              created ? new MemoryCreated({ memory }) : new MemoryFound({ memory })
            ),
            Effect.mapError(toApiError)
          )
      )
      .handle(
        "update",
        Effect.fn(function* ({ params, payload }) {
          const changes: MemoryChanges = {
            content: payload.content,
            cues: payload.cues,
            type: payload.type,
            importance: payload.importance,
            occurredAt: payload.occurredAt === null ? null : optionalInstant(payload.occurredAt),
            tags: payload.tags,
            metadata: payload.metadata
          }
          if (Object.values(changes).every((value) => value === undefined)) {
            return yield* BadRequest.of(
              "invalid_request_body",
              "Nothing to change: give content, cues, type, importance, occurredAt, tags or metadata"
            )
          }
          const memory = yield* memories.update(params.id, params.memoryId, changes).pipe(Effect.mapError(toApiError))
          return { memory }
        })
      )
      .handle("import", ({ params, payload }) =>
        memories
          .importAll(
            params.id,
            payload.memories.map((memory) => ({
              content: memory.content,
              type: memory.type,
              importance: memory.importance,
              cues: memory.cues,
              occurredAt: optionalInstant(memory.occurredAt),
              createdAt: optionalInstant(memory.createdAt),
              supersedes: memory.supersedes,
              tags: memory.tags,
              metadata: memory.metadata
            }))
          )
          .pipe(
            Effect.map((imported) => new MemoriesImported(imported)),
            Effect.mapError(toApiError)
          )
      )
      .handle(
        "search",
        Effect.fn(function* ({ params, payload }) {
          const profile = yield* profiles.find(params.id).pipe(Effect.mapError(toApiError))
          return yield* memorySearch
            .search(profile, payload.query, {
              limit: payload.limit,
              type: payload.type,
              filter: payload.filter,
              at: payload.at === undefined ? undefined : instantOf(payload.at)
            })
            .pipe(Effect.mapError(toApiError))
        })
      )
      .handle("remove", ({ params }) =>
        memories
          .remove(params.id, params.memoryId)
          .pipe(Effect.as({ success: true as const }), Effect.mapError(toApiError))
      )
  })
)
