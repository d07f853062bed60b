import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { SummaryVersion } from "../domain/History.ts"
import { Job } from "../domain/Job.ts"
import { Memory, RecentMemory } from "../domain/Memory.ts"
import { Message } from "../domain/Message.ts"
import { ExternalId, ListedProfile, MAX_SUMMARY_LENGTH, Profile } from "../domain/Profile.ts"
import { isStorable, StorableString } from "../domain/storableText.ts"
import { Trait } from "../domain/Trait.ts"
import { UuidText } from "../domain/Uuid.ts"
import { ApiValidation } from "../http/ApiValidation.ts"
import { Limit, MAX_PAGE_SIZE, Offset, ProfileRef } from "../http/apiFields.ts"
import { BadRequest, NotFound, PayloadTooLarge } from "../http/OpenAiError.ts"
import { RenderedReceipt } from "../injection/receipt.ts"
import { ExportedConversation } from "../responses/ConversationsRepo.ts"
import { StoredResponse } from "../responses/StoredResponsesRepo.ts"
import { UsageQuery, UsageReportBody } from "../usage/UsageApi.ts"

export const ProfileWithTraits = Schema.Struct({ ...Profile.fields, traits: Schema.Array(Trait) })

export class ProfileCreated extends Schema.Class<ProfileCreated>("ProfileCreated")(
  { profile: Profile },
  { httpApiStatus: 201, description: "The profile was created" }
) {}

export class ProfileFound extends Schema.Class<ProfileFound>("ProfileFound")(
  { profile: Profile },
  { description: "The profile already existed" }
) {}

export class JobAccepted extends Schema.Class<JobAccepted>("JobAccepted")(
  { job: Job },
  { httpApiStatus: 202, description: "Queued (or still running when `wait` ran out)" }
) {}

export class JobFinished extends Schema.Class<JobFinished>("JobFinished")(
  { job: Job },
  { description: "With `wait=true`: the job has finished" }
) {}

/**
 * What a message would get injected: the block (null: nothing) and its receipt, as the header has it;
 * or, when a plugin's `inject` hook would refuse the request (or a required one fail), that refusal.
 */
export const PreviewResponse = Schema.Struct({
  context: Schema.NullOr(Schema.String),
  receipt: Schema.NullOr(RenderedReceipt),
  refusal: Schema.NullOr(Schema.Struct({ status: Schema.Int, code: Schema.String, message: Schema.String }))
})

/** `/api/profiles`: the profiles, their summaries and recorded messages, the preview and ingest. */
export class ProfilesGroup extends HttpApiGroup.make("profiles")
  .add(
    HttpApiEndpoint.get("list", "/", {
      query: {
        limit: Schema.optionalKey(Limit),
        offset: Schema.optionalKey(Offset),
        search: Schema.optionalKey(StorableString.check(Schema.isMaxLength(256)))
      },
      success: Schema.Struct({ profiles: Schema.Array(ListedProfile), total: Schema.Int })
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List profiles",
        description:
          `Newest first, each with its counts of traits, memories and messages and its last activity. ` +
          `\`search\` matches external ids by case-insensitive substring (\`%\` and \`_\` are literal); \`limit\` is capped at ${MAX_PAGE_SIZE}.`
      })
    ),
    HttpApiEndpoint.post("create", "/", {
      payload: Schema.Struct({ externalId: ExternalId }),
      success: [ProfileCreated, ProfileFound]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Get or create a profile",
        description: "Get or create the profile of an external id"
      })
    ),
    HttpApiEndpoint.get("get", "/:id", {
      params: ProfileRef,
      success: Schema.Struct({ profile: ProfileWithTraits, recentMemories: Schema.Array(RecentMemory) }),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Read a profile" })),
    HttpApiEndpoint.patch("update", "/:id", {
      params: ProfileRef,
      payload: Schema.Struct({ summary: StorableString.check(Schema.isMaxLength(MAX_SUMMARY_LENGTH)) }),
      success: Schema.Struct({ profile: Profile }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Set a profile's summary",
        description: "Set the summary; bumps summaryVersion atomically"
      })
    ),
    HttpApiEndpoint.delete("remove", "/:id", {
      params: ProfileRef,
      success: Schema.Struct({
        success: Schema.Literal(true),
        /** The profile that was removed: a caller can see it removed the one it meant. */
        profile: Schema.Struct({ id: Schema.String, externalId: Schema.String }),
        deleted: Schema.Struct({ traits: Schema.Int, memories: Schema.Int, messages: Schema.Int })
      }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Delete a profile",
        description: "Delete the profile and everything attached to it; names the profile removed"
      })
    ),
    HttpApiEndpoint.get("export", "/:id/export", {
      params: ProfileRef,
      success: Schema.Struct({
        profile: Profile,
        traits: Schema.Array(Trait),
        memories: Schema.Array(Memory),
        messages: Schema.Array(Message),
        /** The Responses API responses the gateway kept (`UPSTREAM_RESPONSES_STATE=gateway`), oldest first. */
        responses: Schema.Array(StoredResponse),
        /** The conversations (Conversations API) the gateway kept, with their items, oldest first. */
        conversations: Schema.Array(ExportedConversation),
        exportedAt: Schema.DateTimeUtc
      }),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Export a profile" })),
    HttpApiEndpoint.get("usage", "/:id/usage", {
      params: ProfileRef,
      query: UsageQuery,
      success: UsageReportBody,
      error: [NotFound, BadRequest]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "A profile's token usage",
        description:
          "The tokens of the user's requests and of the memory work done for them, per `groupBy` (default `day`) " +
          "over `from`..`to` (UTC days, both included; default the last 30 days): `/api/usage` for this user."
      })
    ),
    HttpApiEndpoint.get("summaryHistory", "/:id/summary/history", {
      params: ProfileRef,
      success: Schema.Struct({ history: Schema.Array(SummaryVersion) }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({ summary: "List summary versions", description: "Every summary version, newest first" })
    ),
    HttpApiEndpoint.get("messages", "/:id/messages", {
      params: ProfileRef,
      query: {
        limit: Schema.optionalKey(Limit),
        before: Schema.optionalKey(UuidText.annotate({ description: "The id of the oldest message already seen" }))
      },
      success: Schema.Struct({ messages: Schema.Array(Message) }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List recorded messages",
        description:
          `The profile's recorded turns, newest first, \`limit\` at a time (at most ${MAX_PAGE_SIZE}); ` +
          "`before` pages back from the oldest message already seen."
      })
    ),
    HttpApiEndpoint.post("preview", "/:id/preview", {
      params: ProfileRef,
      payload: Schema.Struct({ message: Schema.String.check(Schema.isBetweenLength(1, 10_000), isStorable) }),
      success: PreviewResponse,
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Preview what would be injected",
        description:
          "The context block and the `X-Service-Context` receipt a chat completion with this message as " +
          "the user's latest would get, from the same profile cache and ranking; no provider is called, nothing is " +
          "recorded, and no memory is marked as used."
      })
    ),
    HttpApiEndpoint.post("ingest", "/:id/ingest", {
      params: ProfileRef,
      query: { wait: Schema.optionalKey(Schema.Boolean) },
      payload: Schema.Struct({
        data: StorableString.check(Schema.isMinLength(1)),
        source: Schema.optionalKey(StorableString.check(Schema.isMaxLength(200)))
      }),
      success: [JobAccepted, JobFinished],
      error: [NotFound, PayloadTooLarge]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Learn from text about the user",
        description:
          "Queue extraction of traits and memories from arbitrary text about the user. " +
          "202 with the job; `?wait=true` waits (up to the extraction timeout) and answers 200 once the job has finished."
      })
    )
  )
  .prefix("/api/profiles")
  .middleware(ApiValidation)
  .annotateMerge(
    OpenApi.annotations({
      description:
        "`{id}` is the profile's internal UUID or the caller's external id. A UUID always means the internal id: " +
        "a profile whose external id is UUID-shaped is reached by its internal id (find it with `?search=`)."
    })
  ) {}
