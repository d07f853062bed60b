import { Context, Effect, Layer, Option } from "effect"
import {
  type CreatedInFuture,
  type ExpiryInPast,
  MemoryNotFound,
  type UnknownMemoryCategory,
  UnknownSupersededMemory
} from "../domain/errors.ts"
import type { Memory, MemoryType } from "../domain/Memory.ts"
import { CurrentNamespace, oneNamespace } from "../domain/Namespace.ts"
import { SHARED_PROFILE_ID } from "../domain/Profile.ts"
import { isUuid } from "../domain/Uuid.ts"
import { Embedder } from "../embedding/Embedder.ts"
import { type NamespaceRefused, namespaceToManage } from "../namespaces/NamespaceRefused.ts"
import { Profiles } from "../profiles/Profiles.ts"
import {
  type ImportedMemories,
  type ImportedMemory,
  Memories,
  type MemoryChanges,
  type MemoryPage,
  type NewMemory,
  type WrittenMemory
} from "./Memories.ts"
import { MemoriesRepo } from "./MemoriesRepo.ts"
import { MemorySearch, type MemorySearchOptions, type MemorySearchResult } from "./MemorySearch.ts"

/**
 * What an app knows for all its users: its namespace's shared memories (the app's products, its
 * policies), kept in the namespace's shared profile (`SHARED_PROFILE_ID`), which its first memory
 * creates. Written, listed and ranked by the same `Memories` and `MemorySearch` as a user's memories
 * (the same duplicates rule, embedding and cue jobs, cached snapshot), in the namespace the path names:
 * the global admin's key may name any, a namespace's admin key its own (`namespaceToManage`). A namespace
 * without shared knowledge lists none and finds no memory in it. `POST /api/namespaces/{name}/memories…`
 * answers with it; the injection stage ranks the shared snapshot beside the user's (`ContextBlock`).
 */
export class SharedMemories extends Context.Service<
  SharedMemories,
  {
    readonly list: (
      namespace: string,
      options: { readonly type: MemoryType | undefined; readonly limit: number; readonly offset: number }
    ) => Effect.Effect<MemoryPage, NamespaceRefused>
    readonly get: (namespace: string, memoryId: string) => Effect.Effect<Memory, NamespaceRefused | MemoryNotFound>
    /** Adds a memory unless the namespace has it already: the memory stored, or the one it has. */
    readonly addOnce: (
      namespace: string,
      memory: NewMemory
    ) => Effect.Effect<WrittenMemory, NamespaceRefused | UnknownSupersededMemory | UnknownMemoryCategory | ExpiryInPast>
    readonly update: (
      namespace: string,
      memoryId: string,
      changes: MemoryChanges
    ) => Effect.Effect<Memory, NamespaceRefused | MemoryNotFound | UnknownMemoryCategory | ExpiryInPast>
    readonly importAll: (
      namespace: string,
      memories: ReadonlyArray<ImportedMemory>
    ) => Effect.Effect<
      ImportedMemories,
      NamespaceRefused | UnknownSupersededMemory | CreatedInFuture | UnknownMemoryCategory | ExpiryInPast
    >
    readonly remove: (namespace: string, memoryId: string) => Effect.Effect<void, NamespaceRefused | MemoryNotFound>
    /** The shared memories ranked for a text as injection ranks them. */
    readonly search: (
      namespace: string,
      text: string,
      options: MemorySearchOptions
    ) => Effect.Effect<MemorySearchResult, NamespaceRefused>
  }
>()("gateway/memories/SharedMemories") {
  static readonly layer = Layer.effect(
    SharedMemories,
    Effect.gen(function* () {
      const memories = yield* Memories
      const profiles = yield* Profiles
      const repo = yield* MemoriesRepo
      const memorySearch = yield* MemorySearch
      const embeddingsOn = (yield* Embedder).model !== undefined

      /** `effect` on the namespace's shared profile, once the caller may manage the namespace. */
      const inNamespace = <A, E>(name: string, effect: Effect.Effect<A, E>): Effect.Effect<A, E | NamespaceRefused> =>
        Effect.flatMap(namespaceToManage(name), (namespace) =>
          Effect.provideService(effect, CurrentNamespace, oneNamespace(namespace))
        )

      /** A write with no shared profile to write to yet names memories it cannot have. */
      const unknownSuperseded = (written: ReadonlyArray<NewMemory>) => () =>
        Effect.fail(new UnknownSupersededMemory({ memoryIds: written.flatMap((memory) => memory.supersedes ?? []) }))

      const list = Effect.fn("SharedMemories.list")(function* (
        namespace: string,
        options: { readonly type: MemoryType | undefined; readonly limit: number; readonly offset: number }
      ) {
        return yield* inNamespace(
          namespace,
          memories
            .list(SHARED_PROFILE_ID, options)
            .pipe(Effect.catchTag("ProfileNotFound", () => Effect.succeed<MemoryPage>({ memories: [], total: 0 })))
        )
      })

      const get = Effect.fn("SharedMemories.get")(function* (namespace: string, memoryId: string) {
        return yield* inNamespace(
          namespace,
          Effect.gen(function* () {
            if (!isUuid(memoryId)) return yield* new MemoryNotFound({ memoryId })
            const profile = yield* profiles
              .find(SHARED_PROFILE_ID)
              .pipe(Effect.catchTag("ProfileNotFound", () => Effect.fail(new MemoryNotFound({ memoryId }))))
            const found = yield* repo.one(profile.id, memoryId)
            if (Option.isNone(found)) return yield* new MemoryNotFound({ memoryId })
            return found.value
          })
        )
      })

      const addOnce = Effect.fn("SharedMemories.addOnce")(function* (namespace: string, memory: NewMemory) {
        return yield* inNamespace(
          namespace,
          memories.addOnce(SHARED_PROFILE_ID, memory).pipe(
            Effect.catchTags({
              ProfileNotFound: unknownSuperseded([memory]),
              // The shared profile's id is never another profile's UUID.
              ExternalIdConflict: Effect.die
            })
          )
        )
      })

      const importAll = Effect.fn("SharedMemories.importAll")(function* (
        namespace: string,
        imported: ReadonlyArray<ImportedMemory>
      ) {
        return yield* inNamespace(
          namespace,
          memories
            .importAll(SHARED_PROFILE_ID, imported)
            .pipe(Effect.catchTags({ ProfileNotFound: unknownSuperseded(imported), ExternalIdConflict: Effect.die }))
        )
      })

      const update = Effect.fn("SharedMemories.update")(function* (
        namespace: string,
        memoryId: string,
        changes: MemoryChanges
      ) {
        return yield* inNamespace(
          namespace,
          memories
            .update(SHARED_PROFILE_ID, memoryId, changes)
            .pipe(Effect.catchTag("ProfileNotFound", () => Effect.fail(new MemoryNotFound({ memoryId }))))
        )
      })

      const remove = Effect.fn("SharedMemories.remove")(function* (namespace: string, memoryId: string) {
        return yield* inNamespace(
          namespace,
          memories
            .remove(SHARED_PROFILE_ID, memoryId)
            .pipe(Effect.catchTag("ProfileNotFound", () => Effect.fail(new MemoryNotFound({ memoryId }))))
        )
      })

      const nothingFound: MemorySearchResult = {
        memories: [],
        retrieval: { mode: "keyword", semantic: embeddingsOn ? "no_vectors" : "off", period: null, unembedded: 0 }
      }

      const search = Effect.fn("SharedMemories.search")(function* (
        namespace: string,
        text: string,
        options: MemorySearchOptions
      ) {
        return yield* inNamespace(
          namespace,
          profiles.find(SHARED_PROFILE_ID).pipe(
            Effect.flatMap((profile) => memorySearch.search(profile, text, options)),
            Effect.catchTag("ProfileNotFound", () => Effect.succeed(nothingFound))
          )
        )
      })

      return SharedMemories.of({ list, get, addOnce, update, importAll, remove, search })
    })
  ).pipe(Layer.provide([Memories.layer, MemorySearch.layer, MemoriesRepo.layer, Profiles.layer, Embedder.layer]))
}
