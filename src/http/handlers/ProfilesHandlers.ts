import { DateTime, Effect, Option, Schedule } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig } from "../../config/AppConfig.ts"
import { JobQueue } from "../../store/JobQueue.ts"
import { ProfileStore } from "../../store/ProfileStore.ts"
import { DEFAULT_PAGE_SIZE, GatewayApi, JobAccepted, JobFinished, MAX_PAGE_SIZE, ProfileCreated, ProfileFound } from "../Api.ts"
import { PluginHost } from "../../plugins/PluginHost.ts"
import { BadRequest, PayloadTooLarge } from "../OpenAiError.ts"
import { externalIdConflict, profileNotFound } from "./domainErrors.ts"

/** How often `?wait=true` looks at the job. */
const WAIT_POLL = "100 millis"

export const ProfilesHandlers = HttpApiBuilder.group(
  GatewayApi,
  "profiles",
  Effect.fn(function*(handlers) {
    const store = yield* ProfileStore
    const queue = yield* JobQueue
    const host = yield* PluginHost
    const extraction = (yield* AppConfig).extraction

    /** The job once it has finished, or as it is when the wait runs out. */
    const awaitJob = (jobId: string) =>
      queue.get(jobId).pipe(
        Effect.map(Option.getOrThrow),
        Effect.repeat({
          schedule: Schedule.spaced(WAIT_POLL),
          until: (job) => job.status === "succeeded" || job.status === "failed"
        }),
        Effect.timeoutOption(extraction.timeoutMs + 5000),
        Effect.flatMap(Option.match({
          onNone: () => Effect.map(queue.get(jobId), Option.getOrThrow),
          onSome: Effect.succeed
        }))
      )

    return handlers
      .handle("list", ({ query }) =>
        store.list({
          limit: Math.min(query.limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
          offset: query.offset ?? 0,
          search: query.search
        }))
      .handle("create", ({ payload }) =>
        store.getOrCreate(payload.externalId).pipe(
          Effect.map(({ created, profile }) => created ? new ProfileCreated({ profile }) : new ProfileFound({ profile })),
          Effect.catchTags({ ExternalIdConflict: externalIdConflict })
        ))
      .handle("get", ({ params }) =>
        store.detail(params.id).pipe(
          Effect.map(({ profile, recentMemories, traits }) => ({ profile: { ...profile, traits }, recentMemories })),
          Effect.catchTags({ ProfileNotFound: profileNotFound })
        ))
      .handle("update", ({ params, payload }) =>
        store.setSummary(params.id, payload.summary).pipe(
          Effect.map((profile) => ({ profile })),
          Effect.catchTags({ ProfileNotFound: profileNotFound })
        ))
      .handle("remove", ({ params }) =>
        store.remove(params.id).pipe(
          Effect.map(({ deleted, profile }) => ({ success: true as const, profile, deleted })),
          Effect.catchTags({ ProfileNotFound: profileNotFound })
        ))
      .handle("summaryHistory", ({ params }) =>
        store.summaryHistory(params.id).pipe(
          Effect.map((history) => ({ history })),
          Effect.catchTags({ ProfileNotFound: profileNotFound })
        ))
      .handle("ingest", Effect.fn(function*({ params, payload, query }) {
        if (payload.data.length > extraction.maxIngestCharacters) {
          return yield* PayloadTooLarge.of(
            `data is ${payload.data.length} characters; at most ${extraction.maxIngestCharacters} can be ingested at once`
          )
        }
        const profile = yield* store.find(params.id).pipe(Effect.catchTags({ ProfileNotFound: profileNotFound }))
        // Ingested text is stored with the job: the `beforeRecord` plugins see it first, as they see turns.
        const [document] = yield* host.beforeRecord([{ role: "user", content: payload.data, toolCalls: null, toolCallId: null }]).pipe(
          Effect.catchTags({
            PluginRejection: (rejection) => Effect.fail(BadRequest.of(rejection.code, rejection.message)),
            PluginFailed: (failure) => Effect.die(failure)
          })
        )
        const job = yield* queue.enqueueIngest(profile.id, document?.content ?? payload.data, payload.source ?? null)
        if (query.wait !== true) return new JobAccepted({ job })
        const latest = yield* awaitJob(job.id)
        return latest.status === "succeeded" || latest.status === "failed"
          ? new JobFinished({ job: latest })
          : new JobAccepted({ job: latest })
      }))
      .handle("export", ({ params }) =>
        store.exportAll(params.id).pipe(
          Effect.flatMap((data) => Effect.map(DateTime.now, (exportedAt) => ({ ...data, exportedAt }))),
          Effect.catchTags({ ProfileNotFound: profileNotFound })
        ))
  })
)
