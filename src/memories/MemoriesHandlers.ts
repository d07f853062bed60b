import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { pageSize } from "../http/apiFields.ts"
import { toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { Memories } from "./Memories.ts"
import { MemoriesGroup, MemoriesImported } from "./MemoriesApi.ts"
import { MemorySearch } from "./MemorySearch.ts"
import { changesOf, memoryOfBody, optionalInstant, writtenAnswer } from "./memoryPayloads.ts"

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
            category: query.category,
            limit: pageSize(query.limit),
            offset: query.offset ?? 0
          })
          .pipe(Effect.mapError(toApiError))
      )
      .handle("create", ({ params, payload }) =>
        memories.addOnce(params.id, memoryOfBody(payload)).pipe(Effect.map(writtenAnswer), Effect.mapError(toApiError))
      )
      .handle("update", ({ params, payload }) =>
        changesOf(payload).pipe(
          Effect.flatMap((changes) =>
            memories.update(params.id, params.memoryId, changes).pipe(Effect.mapError(toApiError))
          ),
          Effect.map((memory) => ({ memory }))
        )
      )
      .handle("import", ({ params, payload }) =>
        memories.importAll(params.id, payload.memories.map(memoryOfBody)).pipe(
          Effect.map((imported) => new MemoriesImported(imported)),
          Effect.mapError(toApiError)
        )
      )
      .handle(
        "search",
        Effect.fn(function* ({ params, payload }) {
          const profile = yield* profiles.findCached(params.id).pipe(Effect.mapError(toApiError))
          return yield* memorySearch
            .search(profile, payload.query, {
              limit: payload.limit,
              type: payload.type,
              filter: payload.filter,
              at: optionalInstant(payload.at)
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
