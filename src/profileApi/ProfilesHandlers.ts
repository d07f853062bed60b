import { DateTime, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { hasFinished } from "../domain/Job.ts"
import { oneNamespace } from "../domain/Namespace.ts"
import { ExtractionConfig } from "../extraction/ExtractionConfig.ts"
import { pageSize } from "../http/apiFields.ts"
import { BadRequest, PayloadTooLarge, toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { JobQueue } from "../jobs/JobQueue.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { Usage } from "../usage/Usage.ts"
import { Ingestion } from "./Ingestion.ts"
import { InjectionPreview } from "./InjectionPreview.ts"
import { ProfileRecord } from "./ProfileRecord.ts"
import { JobAccepted, JobFinished, ProfileCreated, ProfileFound, ProfilesGroup } from "./ProfilesApi.ts"

export const ProfilesHandlers = HttpApiBuilder.group(
  sliceApi(ProfilesGroup),
  "profiles",
  Effect.fn(function* (handlers) {
    const profiles = yield* Profiles
    const record = yield* ProfileRecord
    const extraction = yield* ExtractionConfig
    const injectionPreview = yield* InjectionPreview
    const ingestion = yield* Ingestion
    const jobs = yield* JobQueue
    const usage = yield* Usage

    return handlers
      .handle("list", ({ query }) =>
        profiles.list({
          limit: pageSize(query.limit),
          offset: query.offset ?? 0,
          search: query.search
        })
      )
      .handle("create", ({ payload }) =>
        profiles.getOrCreate(payload.externalId).pipe(
          Effect.map(({ created, profile }) =>
            created ? new ProfileCreated({ profile }) : new ProfileFound({ profile })
          ),
          Effect.mapError(toApiError)
        )
      )
      .handle("preview", ({ params, payload }) =>
        injectionPreview.preview(params.id, payload.message).pipe(Effect.mapError(toApiError))
      )
      .handle("messages", ({ params, query }) =>
        profiles
          .recentMessages(params.id, {
            limit: pageSize(query.limit),
            before: query.before
          })
          .pipe(
            Effect.map((messages) => ({ messages })),
            Effect.mapError(toApiError)
          )
      )
      .handle("get", ({ params }) =>
        record.detail(params.id).pipe(
          Effect.map(({ profile, recentMemories, traits }) => ({ profile: { ...profile, traits }, recentMemories })),
          Effect.mapError(toApiError)
        )
      )
      .handle("update", ({ params, payload }) =>
        profiles.setSummary(params.id, payload.summary).pipe(
          Effect.map((profile) => ({ profile })),
          Effect.mapError(toApiError)
        )
      )
      .handle("remove", ({ params }) =>
        profiles.remove(params.id).pipe(
          Effect.map(({ deleted, profile }) => ({ success: true as const, profile, deleted })),
          Effect.mapError(toApiError)
        )
      )
      .handle("summaryHistory", ({ params }) =>
        profiles.summaryHistory(params.id).pipe(
          Effect.map((history) => ({ history })),
          Effect.mapError(toApiError)
        )
      )
      .handle(
        "ingest",
        Effect.fn(function* ({ params, payload, query }) {
          if (payload.data.length > extraction.maxIngestCharacters) {
            return yield* PayloadTooLarge.of(
              `data is ${payload.data.length} characters; at most ${extraction.maxIngestCharacters} can be ingested at once`
            )
          }
          const job = yield* ingestion.ingest(params.id, payload.data, payload.source ?? null).pipe(
            Effect.catchTags({
              // A rejection is a 400 here whatever its status: the endpoint documents the statuses it can answer.
              PluginRejection: (rejection) => Effect.fail(BadRequest.of(rejection.code, rejection.message)),
              ProfileNotFound: (notFound) => Effect.fail(toApiError(notFound))
            })
          )
          if (query.wait !== true) return new JobAccepted({ job })
          const latest = yield* jobs.await(job.id, extraction.timeoutMs + 5000).pipe(Effect.mapError(toApiError))
          return hasFinished(latest) ? new JobFinished({ job: latest }) : new JobAccepted({ job: latest })
        })
      )
      .handle("usage", ({ params, query }) =>
        profiles.find(params.id).pipe(
          Effect.flatMap((profile) =>
            usage.report(query.groupBy ?? "day", query, {
              scope: oneNamespace(profile.namespace),
              userId: profile.externalId
            })
          ),
          Effect.mapError(toApiError)
        )
      )
      .handle("export", ({ params }) =>
        record.exportAll(params.id).pipe(
          Effect.flatMap((data) => Effect.map(DateTime.now, (exportedAt) => ({ ...data, exportedAt }))),
          Effect.mapError(toApiError)
        )
      )
  })
)
