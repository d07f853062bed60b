import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { pageSize } from "../http/apiFields.ts"
import { toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { MemoriesImported } from "./MemoriesApi.ts"
import { changesOf, memoryOfBody, optionalInstant, writtenAnswer } from "./memoryPayloads.ts"
import { SharedMemories } from "./SharedMemories.ts"
import { SharedMemoriesGroup } from "./SharedMemoriesApi.ts"

export const SharedMemoriesHandlers = HttpApiBuilder.group(
  sliceApi(SharedMemoriesGroup),
  "sharedMemories",
  Effect.fn(function* (handlers) {
    const shared = yield* SharedMemories

    return handlers
      .handle("list", ({ params, query }) =>
        shared
          .list(params.name, { type: query.type, limit: pageSize(query.limit), offset: query.offset ?? 0 })
          .pipe(Effect.mapError(toApiError))
      )
      .handle("get", ({ params }) =>
        shared.get(params.name, params.memoryId).pipe(
          Effect.map((memory) => ({ memory })),
          Effect.mapError(toApiError)
        )
      )
      .handle("create", ({ params, payload }) =>
        shared.addOnce(params.name, memoryOfBody(payload)).pipe(Effect.map(writtenAnswer), Effect.mapError(toApiError))
      )
      .handle("update", ({ params, payload }) =>
        changesOf(payload).pipe(
          Effect.flatMap((changes) =>
            shared.update(params.name, params.memoryId, changes).pipe(Effect.mapError(toApiError))
          ),
          Effect.map((memory) => ({ memory }))
        )
      )
      .handle("import", ({ params, payload }) =>
        shared.importAll(params.name, payload.memories.map(memoryOfBody)).pipe(
          Effect.map((imported) => new MemoriesImported(imported)),
          Effect.mapError(toApiError)
        )
      )
      .handle("search", ({ params, payload }) =>
        shared
          .search(params.name, payload.query, {
            limit: payload.limit,
            type: payload.type,
            filter: payload.filter,
            at: optionalInstant(payload.at)
          })
          .pipe(Effect.mapError(toApiError))
      )
      .handle("remove", ({ params }) =>
        shared
          .remove(params.name, params.memoryId)
          .pipe(Effect.as({ success: true as const }), Effect.mapError(toApiError))
      )
  })
)
