import { Context, Effect, Layer, Option } from "effect"
import { ExternalIdConflict, ProfileNotFound } from "../domain/errors.ts"
import type { SummaryVersion } from "../domain/History.ts"
import type { Message } from "../domain/Message.ts"
import { addressedNamespace, currentNamespace } from "../domain/Namespace.ts"
import { type Profile, SHARED_PROFILE_ID } from "../domain/Profile.ts"
import { isUuid } from "../domain/Uuid.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { type ProfileKey, type ProfilePage, ProfilesRepo, type RemovedProfile } from "./ProfilesRepo.ts"
import { SliceTestServices } from "./SliceTestServices.ts"

export type { DeletedCounts, ProfilePage, RemovedProfile } from "./ProfilesRepo.ts"

/**
 * The profile a ref names: a UUID is the internal id and nothing else (an app user cannot take over
 * a path by choosing another profile's UUID as their id); `SHARED_PROFILE_ID`, which no user id can
 * be, the namespace's shared profile; anything else is an external id.
 */
export const profileKeyOf = (ref: string): ProfileKey =>
  ref === SHARED_PROFILE_ID
    ? { _tag: "Shared" }
    : isUuid(ref)
      ? { _tag: "InternalId", id: ref }
      : { _tag: "ExternalId", externalId: ref }

/**
 * Profiles: how a user's profile is found, created, listed, summarised and removed (what is read of
 * it together — its detail, its export — is `profileApi/ProfileRecord.ts`). Every operation that takes a `ref` accepts the
 * profile's internal UUID or the caller's external id (see `profileKeyOf`). A change drops the
 * profile's cached context before it returns.
 */
export class Profiles extends Context.Service<
  Profiles,
  {
    readonly list: (options: {
      readonly limit: number
      readonly offset: number
      readonly search: string | undefined
    }) => Effect.Effect<ProfilePage>
    /**
     * The profile of an external id (already normalised by the user-id rule), created on first use.
     * Refuses to create one whose external id is another profile's internal id. `SHARED_PROFILE_ID`:
     * the namespace's shared profile, created on first use too.
     */
    readonly getOrCreate: (
      externalId: string
    ) => Effect.Effect<{ readonly profile: Profile; readonly created: boolean }, ExternalIdConflict>
    readonly find: (ref: string) => Effect.Effect<Profile, ProfileNotFound>
    /**
     * As `find`, but a user whose context is cached is found there, with no query: for reads that
     * rank what the cache holds anyway (a memory search), as a request's injection does.
     */
    readonly findCached: (ref: string) => Effect.Effect<Profile, ProfileNotFound>
    /**
     * The profile a write names, created on first use as `/v1` creates it: a UUID is the internal id
     * of an existing profile (never created: a path's UUID is no user id); anything else is a user id
     * (decoded by the user-id rule, as `{id}` in a path is), its profile created if new.
     */
    readonly forWrite: (ref: string) => Effect.Effect<Profile, ProfileNotFound | ExternalIdConflict>
    /** The profile of an external id (a user id, even one shaped like a UUID), if it exists; never created. */
    readonly ofUser: (externalId: string) => Effect.Effect<Option.Option<Profile>>
    readonly setSummary: (ref: string, summary: string) => Effect.Effect<Profile, ProfileNotFound>
    /** Deletes the profile with its traits, memories and messages. */
    readonly remove: (ref: string) => Effect.Effect<RemovedProfile, ProfileNotFound>
    /** Every summary version, newest first. */
    readonly summaryHistory: (ref: string) => Effect.Effect<ReadonlyArray<SummaryVersion>, ProfileNotFound>
    /** How many profiles each namespace in the request's scope holds. */
    readonly countByNamespace: Effect.Effect<ReadonlyArray<{ readonly namespace: string; readonly count: number }>>
    /** The recorded messages, newest first, a page at a time (`before`: the oldest message id already seen). */
    readonly recentMessages: (
      ref: string,
      options: { readonly limit: number; readonly before: string | undefined }
    ) => Effect.Effect<ReadonlyArray<Message>, ProfileNotFound>
  }
>()("gateway/profiles/Profiles") {
  /** Needs the database (`PgClient`) and the `RetrievalConfig` section (memories' decay). */
  static readonly layer = Layer.effect(
    Profiles,
    Effect.gen(function* () {
      const repo = yield* ProfilesRepo
      const cache = yield* SnapshotCache

      const find = Effect.fn("Profiles.find")(function* (ref: string) {
        const found = yield* repo.find(profileKeyOf(ref))
        if (Option.isNone(found)) return yield* new ProfileNotFound({ ref })
        return found.value
      })

      const findCached = Effect.fn("Profiles.findCached")(function* (ref: string) {
        const key = profileKeyOf(ref)
        if (key._tag === "ExternalId") {
          const cached = yield* cache.cached(addressedNamespace(yield* currentNamespace), key.externalId)
          if (Option.isSome(cached)) return cached.value.profile
        }
        return yield* find(ref)
      })

      const ofUser = Effect.fn("Profiles.ofUser")(function* (externalId: string) {
        return yield* repo.find({ _tag: "ExternalId", externalId })
      })

      const list = Effect.fn("Profiles.list")(function* (options: {
        readonly limit: number
        readonly offset: number
        readonly search: string | undefined
      }) {
        return yield* repo.page(options)
      })

      const getOrCreate = Effect.fn("Profiles.getOrCreate")(function* (externalId: string) {
        // Read first: the common case writes nothing. The insert is safe against concurrent first calls.
        const shared = externalId === SHARED_PROFILE_ID
        const key: ProfileKey = shared ? { _tag: "Shared" } : { _tag: "ExternalId", externalId }
        const existing = yield* repo.find(key)
        if (Option.isSome(existing)) return { profile: existing.value, created: false }
        const inserted = shared
          ? yield* repo.insertShared
          : yield* repo.insert(externalId, { unlessInternalId: isUuid(externalId) })
        if (Option.isSome(inserted)) {
          // Requests of the namespace stop going without it here at once (other replicas: notified).
          if (shared) yield* cache.invalidateShared(inserted.value.namespace)
          return { profile: inserted.value, created: true }
        }
        // Either a concurrent call created it, or the id is another profile's internal id.
        const raced = yield* repo.find(key)
        if (Option.isSome(raced)) return { profile: raced.value, created: false }
        return yield* new ExternalIdConflict({ externalId })
      })

      const forWrite = Effect.fn("Profiles.forWrite")(function* (ref: string) {
        if (isUuid(ref)) return yield* find(ref)
        return (yield* getOrCreate(ref)).profile
      })

      const setSummary = Effect.fn("Profiles.setSummary")(function* (ref: string, summary: string) {
        const updated = yield* repo.setSummary(profileKeyOf(ref), summary)
        if (Option.isNone(updated)) return yield* new ProfileNotFound({ ref })
        yield* cache.invalidate(updated.value.id)
        return updated.value
      })

      const remove = Effect.fn("Profiles.remove")(function* (ref: string) {
        const removed = yield* repo.remove(profileKeyOf(ref))
        if (Option.isNone(removed)) return yield* new ProfileNotFound({ ref })
        // Gone from this process's cache at once; the fence waits until every replica has applied it,
        // so once the DELETE answers no replica injects the erased profile.
        yield* cache.invalidate(removed.value.profile.id)
        yield* cache.fence
        return removed.value
      })

      const summaryHistory = Effect.fn("Profiles.summaryHistory")(function* (ref: string) {
        const profile = yield* find(ref)
        return yield* repo.summaryHistory(profile.id)
      })

      const recentMessages = Effect.fn("Profiles.recentMessages")(function* (
        ref: string,
        options: { readonly limit: number; readonly before: string | undefined }
      ) {
        const profile = yield* find(ref)
        return yield* repo.recentMessages(profile.id, options)
      })

      return Profiles.of({
        list,
        getOrCreate,
        find,
        findCached,
        forWrite,
        ofUser,
        setSummary,
        remove,
        summaryHistory,
        recentMessages,
        countByNamespace: repo.countByNamespace
      })
    })
  ).pipe(Layer.provide([ProfilesRepo.layer, SnapshotCache.layer]))

  /**
   * The live service on the database you provide, with the small services it needs built for a
   * test (defaults, embeddings off); the `SnapshotCache` it invalidates is in the output.
   */
  static readonly layerTest = Profiles.layer.pipe(Layer.provideMerge(SliceTestServices))
}
