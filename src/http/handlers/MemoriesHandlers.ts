import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileStore } from "../../store/ProfileStore.ts"
import { DEFAULT_PAGE_SIZE, GatewayApi, MAX_PAGE_SIZE, MemoryCreated } from "../Api.ts"
import { memoryNotFound, profileNotFound } from "./domainErrors.ts"

/** Importance of a memory written by hand when the caller gives none. */
const DEFAULT_IMPORTANCE = 0.5

export const MemoriesHandlers = HttpApiBuilder.group(
  GatewayApi,
  "memories",
  Effect.fn(function*(handlers) {
    const store = yield* ProfileStore
    return handlers
      .handle("list", ({ params, query }) =>
        store.listMemories(params.id, {
          type: query.type,
          limit: Math.min(query.limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
          offset: query.offset ?? 0
        }).pipe(
          Effect.map((memories) => ({ memories })),
          Effect.catchTags({ ProfileNotFound: profileNotFound })
        ))
      .handle("create", ({ params, payload }) =>
        store.addMemory(params.id, {
          content: payload.content,
          type: payload.type,
          importance: payload.importance ?? DEFAULT_IMPORTANCE
        }).pipe(
          Effect.map((memory) => new MemoryCreated({ memory })),
          Effect.catchTags({ ProfileNotFound: profileNotFound })
        ))
      .handle("remove", ({ params }) =>
        store.deleteMemory(params.id, params.memoryId).pipe(
          Effect.as({ success: true as const }),
          Effect.catchTags({ ProfileNotFound: profileNotFound, MemoryNotFound: memoryNotFound })
        ))
  })
)
