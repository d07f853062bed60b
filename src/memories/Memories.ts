import { Clock, Context, Effect, Layer, Option } from "effect"
import {
  CreatedInFuture,
  ExpiryInPast,
  type ExternalIdConflict,
  MemoryNotFound,
  ProfileNotFound,
  UnknownMemoryCategory,
  UnknownSupersededMemory
} from "../domain/errors.ts"
import { DEFAULT_IMPORTANCE, type Memory, type MemoryType } from "../domain/Memory.ts"
import type { Profile, ProfileId } from "../domain/Profile.ts"
import { isUuid } from "../domain/Uuid.ts"
import { Embedder } from "../embedding/Embedder.ts"
import { ExtractionConfig, extractionAtDefaults } from "../extraction/ExtractionConfig.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { NamespaceSettingsStore } from "../settings/NamespaceSettingsStore.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import {
  type ImportedMemory,
  MemoriesRepo,
  type MemoryChanges,
  type MemoryPage,
  type NewMemory,
  type WrittenMemory
} from "./MemoriesRepo.ts"

export type { ImportedMemory, MemoryChanges, MemoryPage, NewMemory, WrittenMemory } from "./MemoriesRepo.ts"

/** What an import did: the memories it stored, in the order given, and how many it left out as repeats. */
export interface ImportedMemories {
  readonly memories: ReadonlyArray<Memory>
  readonly duplicates: number
}

/**
 * Why a write fails: no such profile (or a UUID naming none), a bad `supersedes`, a user id that is
 * another profile's UUID, a category its namespace does not declare.
 */
export type WriteFailure =
  | ProfileNotFound
  | UnknownSupersededMemory
  | ExternalIdConflict
  | UnknownMemoryCategory
  | ExpiryInPast

/** Clocks differ a little: an imported creation time this far ahead still counts as now. */
const CLOCK_SKEW_MS = 60_000

/**
 * Memories written, changed and removed by hand through the management API (and MCP). A write
 * creates its user's profile on first use, as `/v1` does (`Profiles.forWrite`). A memory the profile
 * has already (the same type and text, see `MemoriesRepo.insert`) is not stored again: the write
 * answers with the one it has. A memory may supersede others of the same profile (a fact that
 * changed): they are kept but never injected. With embeddings on, a new or changed text queues the
 * profile's `embed` job in the same statement; a memory written without cues queues a `cues` job
 * (`EXTRACTION_WRITE_CUES`). A change drops the profile's cached context.
 */
export class Memories extends Context.Service<
  Memories,
  {
    readonly list: (
      ref: string,
      options: {
        readonly type: MemoryType | undefined
        readonly category?: string | undefined
        readonly limit: number
        readonly offset: number
      }
    ) => Effect.Effect<MemoryPage, ProfileNotFound>
    /** Adds a memory unless the profile has it already: the memory stored, or the one it has. */
    readonly add: (ref: string, memory: NewMemory) => Effect.Effect<Memory, WriteFailure>
    /** The same, saying whether the memory was stored (`created`) or the profile had it. */
    readonly addOnce: (ref: string, memory: NewMemory) => Effect.Effect<WrittenMemory, WriteFailure>
    /** Changes a memory; a new text is embedded again in the background. */
    readonly update: (
      ref: string,
      memoryId: string,
      changes: MemoryChanges
    ) => Effect.Effect<Memory, ProfileNotFound | MemoryNotFound | UnknownMemoryCategory | ExpiryInPast>
    /**
     * Adds many memories in one transaction (all or none), leaving out those the profile has already
     * and repeats within the import; none may have been created in the future.
     */
    readonly importAll: (
      ref: string,
      memories: ReadonlyArray<ImportedMemory>
    ) => Effect.Effect<ImportedMemories, WriteFailure | CreatedInFuture>
    readonly remove: (ref: string, memoryId: string) => Effect.Effect<void, ProfileNotFound | MemoryNotFound>
  }
>()("gateway/memories/Memories") {
  /** Needs the database (`PgClient`) and the `ExtractionConfig`, `RetrievalConfig` and `EmbeddingConfig` sections. */
  static readonly layer = Layer.effect(
    Memories,
    Effect.gen(function* () {
      const repo = yield* MemoriesRepo
      const profiles = yield* Profiles
      const cache = yield* SnapshotCache
      const embeddingsOn = (yield* Embedder).model !== undefined
      const { writeCues } = yield* ExtractionConfig
      const settings = yield* NamespaceSettingsStore

      const list = Effect.fn("Memories.list")(function* (
        ref: string,
        options: {
          readonly type: MemoryType | undefined
          readonly category?: string | undefined
          readonly limit: number
          readonly offset: number
        }
      ) {
        const profile = yield* profiles.find(ref)
        return yield* repo.page(profile.id, options)
      })

      /** Fails unless every id names a memory of the profile (superseded ones included). */
      const checkSuperseded = Effect.fnUntraced(function* (profileId: ProfileId, ids: ReadonlyArray<string>) {
        const unique = [...new Set(ids)]
        if (unique.length === 0) return
        // Only a UUID can name a memory: anything else is unknown without asking the database.
        const found = new Set((yield* repo.existingIds(profileId, unique.filter(isUuid))).map((id) => id.toLowerCase()))
        const unknown = unique.filter((id) => !found.has(id.toLowerCase()))
        if (unknown.length > 0) return yield* new UnknownSupersededMemory({ memoryIds: unknown })
      })

      /** Fails unless every category named is one of the profile's namespace's. */
      const checkCategories = Effect.fnUntraced(function* (
        profile: Profile,
        categories: ReadonlyArray<string | null | undefined>
      ) {
        const named = categories.filter((category): category is string => typeof category === "string")
        if (named.length === 0) return
        const known = (yield* settings.get(profile.namespace)).memoryCategories.map((category) => category.name)
        const unknown = named.find((category) => !known.includes(category))
        if (unknown !== undefined)
          return yield* new UnknownMemoryCategory({ category: unknown, namespace: profile.namespace, known })
      })

      /** Fails unless every expiry given is in the future. */
      const checkExpiries = Effect.fnUntraced(function* (
        expiries: ReadonlyArray<number | null | undefined>,
        param: (index: number) => string
      ) {
        const now = yield* Clock.currentTimeMillis
        const past = expiries.findIndex((expiresAt) => typeof expiresAt === "number" && expiresAt <= now)
        if (past !== -1) return yield* new ExpiryInPast({ param: param(past) })
      })

      const insert = (ref: string, profileId: ProfileId, memories: ReadonlyArray<ImportedMemory>) =>
        repo
          .insert(
            profileId,
            memories.map((memory) => ({
              ...memory,
              importance: memory.importance ?? DEFAULT_IMPORTANCE,
              cues: memory.cues ?? [],
              cuesWanted: writeCues && memory.cues === undefined
            })),
            { queueEmbedding: embeddingsOn }
          )
          .pipe(
            Effect.catchTag("ProfileDeleted", () => Effect.fail(new ProfileNotFound({ ref }))),
            Effect.tap(() => cache.invalidate(profileId))
          )

      /**
       * The profile a write goes to, created on first use; it must exist already for a write that
       * stores nothing or replaces memories (a new profile has none to replace).
       */
      const profileToWrite = (ref: string, memories: ReadonlyArray<NewMemory>) =>
        memories.length === 0 || memories.some((memory) => (memory.supersedes ?? []).length > 0)
          ? profiles.find(ref)
          : profiles.forWrite(ref)

      const addOnce = Effect.fn("Memories.addOnce")(function* (ref: string, memory: NewMemory) {
        const profile = yield* profileToWrite(ref, [memory])
        yield* checkCategories(profile, [memory.category])
        yield* checkExpiries([memory.expiresAt], () => "expiresAt")
        yield* checkSuperseded(profile.id, memory.supersedes ?? [])
        const [written] = yield* insert(ref, profile.id, [memory])
        return written!
      })

      const add = (ref: string, memory: NewMemory) => Effect.map(addOnce(ref, memory), (written) => written.memory)

      const importAll = Effect.fn("Memories.importAll")(function* (
        ref: string,
        memories: ReadonlyArray<ImportedMemory>
      ) {
        const now = yield* Clock.currentTimeMillis
        const future = memories.findIndex(
          (memory) => memory.createdAt !== undefined && memory.createdAt > now + CLOCK_SKEW_MS
        )
        if (future !== -1) return yield* new CreatedInFuture({ index: future })
        const profile = yield* profileToWrite(ref, memories)
        if (memories.length === 0) return { memories: [], duplicates: 0 }
        yield* checkCategories(
          profile,
          memories.map((memory) => memory.category)
        )
        yield* checkExpiries(
          memories.map((memory) => memory.expiresAt),
          (index) => `memories.${index}.expiresAt`
        )
        yield* checkSuperseded(
          profile.id,
          memories.flatMap((memory) => memory.supersedes ?? [])
        )
        const written = yield* insert(ref, profile.id, memories)
        const stored = written.filter((memory) => memory.created).map((memory) => memory.memory)
        return { memories: stored, duplicates: written.length - stored.length }
      })

      const update = Effect.fn("Memories.update")(function* (ref: string, memoryId: string, changes: MemoryChanges) {
        const profile = yield* profiles.find(ref)
        if (!isUuid(memoryId)) return yield* new MemoryNotFound({ memoryId })
        yield* checkCategories(profile, [changes.category])
        yield* checkExpiries([changes.expiresAt], () => "expiresAt")
        const textChanged = changes.content !== undefined || changes.cues !== undefined
        const updated = yield* repo.update(profile.id, memoryId, changes, {
          queueEmbedding: embeddingsOn && textChanged,
          // A new text without cues: the cue writer gives it some, unless it has cues already.
          wantCues: writeCues && changes.content !== undefined && changes.cues === undefined
        })
        if (Option.isNone(updated)) return yield* new MemoryNotFound({ memoryId })
        yield* cache.invalidate(profile.id)
        return updated.value
      })

      const remove = Effect.fn("Memories.remove")(function* (ref: string, memoryId: string) {
        const profile = yield* profiles.find(ref)
        if (!isUuid(memoryId)) return yield* new MemoryNotFound({ memoryId })
        if (!(yield* repo.remove(profile.id, memoryId))) return yield* new MemoryNotFound({ memoryId })
        yield* cache.invalidate(profile.id)
      })

      return Memories.of({ list, add, addOnce, update, importAll, remove })
    })
  ).pipe(
    Layer.provide([
      MemoriesRepo.layer,
      Embedder.layer,
      SnapshotCache.layer,
      Profiles.layer,
      NamespaceSettingsStore.layer
    ])
  )

  /**
   * The live service on the database you provide, with the extraction section at its defaults and
   * `Profiles.layerTest` (whose services are in the output).
   */
  static readonly layerTest = Memories.layer.pipe(
    Layer.provideMerge(extractionAtDefaults),
    Layer.provideMerge(Profiles.layerTest)
  )
}
