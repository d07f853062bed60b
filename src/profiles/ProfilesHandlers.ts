import { DateTime, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { hasFinished } from "../domain/Job.ts"
import { ExtractionConfig } from "../extraction/ExtractionConfig.ts"
import { GatewayApi } from "../http/Api.ts"
import { pageSize } from "../http/apiFields.ts"
import { BadRequest, PayloadTooLarge, toApiError } from "../http/OpenAiError.ts"
import { awaitJob } from "../jobs/awaitJob.ts"
import type { JobQueue } from "../jobs/JobQueue.ts"
import type { PluginHost } from "../plugins/PluginHost.ts"
import type { Retrieval } from "../retrieval/Retrieval.ts"
import type { RetrievalConfig } from "../retrieval/RetrievalConfig.ts"
import type { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import type { TraitSchema } from "../traits/TraitSchema.ts"
import { ingestText } from "./ingestText.ts"
import { Profiles } from "./Profiles.ts"
import { JobAccepted, JobFinished, ProfileCreated, ProfileFound } from "./ProfilesApi.ts"
import { previewInjection } from "./previewInjection.ts"

export const ProfilesHandlers = HttpApiBuilder.group(
  GatewayApi,
  "profiles",
  Effect.fn(function* (handlers) {
    const profiles = yield* Profiles
    const extraction = yield* ExtractionConfig
    // What rendering the block needs, for the preview (resolved once, like the services above).
    const blockServices = yield* Effect.context<RetrievalConfig | PluginHost | Retrieval>()
    // What the preview, the ingest and its wait need besides.
    const useCaseServices = yield* Effect.context<Profiles | SnapshotCache | TraitSchema | PluginHost | JobQueue>()

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
        previewInjection(params.id, payload.message).pipe(
          Effect.provideContext(blockServices),
          Effect.provideContext(useCaseServices),
          Effect.mapError(toApiError)
        )
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
        profiles.detail(params.id).pipe(
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
          const job = yield* ingestText(params.id, payload.data, payload.source ?? null).pipe(
            Effect.provideContext(useCaseServices),
            Effect.catchTags({
              // A rejection is a 400 here whatever its status: the endpoint documents the statuses it can answer.
              PluginRejection: (rejection) => Effect.fail(BadRequest.of(rejection.code, rejection.message)),
              ProfileNotFound: (notFound) => Effect.fail(toApiError(notFound))
            })
          )
          if (query.wait !== true) return new JobAccepted({ job })
          const latest = yield* awaitJob(job.id, extraction.timeoutMs + 5000).pipe(
            Effect.provideContext(useCaseServices),
            Effect.mapError(toApiError)
          )
          return hasFinished(latest) ? new JobFinished({ job: latest }) : new JobAccepted({ job: latest })
        })
      )
      .handle("export", ({ params }) =>
        profiles.exportAll(params.id).pipe(
          Effect.flatMap((data) => Effect.map(DateTime.now, (exportedAt) => ({ ...data, exportedAt }))),
          Effect.mapError(toApiError)
        )
      )
  })
)
