import { Context, Effect, Layer } from "effect"
import type { ProfileNotFound } from "../domain/errors.ts"
import type { Memory, RecentMemory } from "../domain/Memory.ts"
import type { Message } from "../domain/Message.ts"
import type { Profile } from "../domain/Profile.ts"
import type { Trait } from "../domain/Trait.ts"
import { MemoriesRepo } from "../memories/MemoriesRepo.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { ProfilesRepo } from "../profiles/ProfilesRepo.ts"
import { ConversationsRepo, type ExportedConversation } from "../responses/ConversationsRepo.ts"
import { type StoredResponse, StoredResponsesRepo } from "../responses/StoredResponsesRepo.ts"
import { TraitsRepo } from "../traits/TraitsRepo.ts"

export interface ProfileDetail {
  readonly profile: Profile
  readonly traits: ReadonlyArray<Trait>
  readonly recentMemories: ReadonlyArray<RecentMemory>
}

export interface ProfileExport {
  readonly profile: Profile
  readonly traits: ReadonlyArray<Trait>
  readonly memories: ReadonlyArray<Memory>
  readonly messages: ReadonlyArray<Message>
  /** The Responses API responses the gateway kept for the user. */
  readonly responses: ReadonlyArray<StoredResponse>
  /** The user's conversations (Conversations API) the gateway kept, with their items. */
  readonly conversations: ReadonlyArray<ExportedConversation>
}

/** How many memories a single-profile read lists as `recentMemories`. */
export const RECENT_MEMORIES = 10

/**
 * What is read of a profile together: its detail (traits and recent memories) and its export
 * (everything the gateway keeps of the user). Above the slices whose data it gathers, so none of them
 * depends on another to be read.
 */
export class ProfileRecord extends Context.Service<
  ProfileRecord,
  {
    readonly detail: (ref: string) => Effect.Effect<ProfileDetail, ProfileNotFound>
    readonly exportAll: (ref: string) => Effect.Effect<ProfileExport, ProfileNotFound>
  }
>()("gateway/profileApi/ProfileRecord") {
  /** Needs the database (`PgClient`) and the `RetrievalConfig` and `ConversationsConfig` sections. */
  static readonly layer = Layer.effect(
    ProfileRecord,
    Effect.gen(function* () {
      const profiles = yield* Profiles
      const profilesRepo = yield* ProfilesRepo
      const traits = yield* TraitsRepo
      const memories = yield* MemoriesRepo
      const storedResponses = yield* StoredResponsesRepo
      const conversations = yield* ConversationsRepo

      const detail = Effect.fn("ProfileRecord.detail")(function* (ref: string) {
        const profile = yield* profiles.find(ref)
        const [traitList, recentMemories] = yield* Effect.all(
          [traits.ofProfile(profile.id), memories.recent(profile.id, RECENT_MEMORIES)],
          { concurrency: 2 }
        )
        return { profile, traits: traitList, recentMemories }
      })

      const exportAll = Effect.fn("ProfileRecord.exportAll")(function* (ref: string) {
        const profile = yield* profiles.find(ref)
        const [traitList, memoryList, messages, responses, conversationList] = yield* Effect.all(
          [
            traits.ofProfile(profile.id),
            memories.all(profile.id),
            profilesRepo.messages(profile.id),
            storedResponses.ofProfile(profile.id),
            conversations.ofProfile(profile.id)
          ],
          { concurrency: 5 }
        )
        return {
          profile,
          traits: traitList,
          memories: memoryList,
          messages,
          responses,
          conversations: conversationList
        }
      })

      return ProfileRecord.of({ detail, exportAll })
    })
  ).pipe(
    Layer.provide(
      Layer.mergeAll(
        Profiles.layer,
        ProfilesRepo.layer,
        TraitsRepo.layer,
        MemoriesRepo.layer,
        StoredResponsesRepo.layer,
        ConversationsRepo.layer
      )
    )
  )
}
