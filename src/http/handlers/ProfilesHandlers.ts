import { Clock, DateTime, Effect, Option, Result, Schedule } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileNotFound } from "../../domain/errors.ts"
import { ExtractionConfig } from "../../extraction/ExtractionConfig.ts"
import { JobQueue } from "../../jobs/JobQueue.ts"
import { contextBlock, renderedReceiptJson } from "../../pipeline/inject.ts"
import { PluginHost } from "../../plugins/PluginHost.ts"
import { Profiles } from "../../profiles/Profiles.ts"
import type { Retrieval } from "../../retrieval/Retrieval.ts"
import type { RetrievalConfig } from "../../retrieval/RetrievalConfig.ts"
import { ContextCache } from "../../store/ContextCache.ts"
import { TraitSchema } from "../../traits/TraitSchema.ts"
import {
  DEFAULT_PAGE_SIZE,
  GatewayApi,
  JobAccepted,
  JobFinished,
  MAX_PAGE_SIZE,
  ProfileCreated,
  ProfileFound
} from "../Api.ts"
import { BadRequest, PayloadTooLarge, toApiError } from "../OpenAiError.ts"

/** How often `?wait=true` looks at the job. */
const WAIT_POLL = "100 millis"

export const ProfilesHandlers = HttpApiBuilder.group(
  GatewayApi,
  "profiles",
  Effect.fn(function* (handlers) {
    const profiles = yield* Profiles
    const queue = yield* JobQueue
    const host = yield* PluginHost
    const extraction = yield* ExtractionConfig
    const cache = yield* ContextCache
    const traitSchema = yield* TraitSchema
    // What rendering the block needs, for the preview (resolved once, like the services above).
    const blockServices = yield* Effect.context<RetrievalConfig | PluginHost | Retrieval>()

    /**
     * What a message from the profile's user would get injected: the block and its receipt, nothing
     * noted; or, when a plugin would refuse the request or fail, the refusal the client would get.
     */
    const preview = Effect.fn("Profiles.preview")(function* (ref: string, message: string) {
      const profile = yield* profiles.find(ref)
      const snapshot = yield* cache
        .snapshot(profile)
        .pipe(
          Effect.flatMap(
            Option.match({ onNone: () => Effect.fail(new ProfileNotFound({ ref })), onSome: Effect.succeed })
          )
        )
      const now = yield* Clock.currentTimeMillis
      const block = yield* contextBlock(
        [{ role: "user", content: message }],
        snapshot,
        traitSchema.definitions,
        now
      ).pipe(Effect.provideContext(blockServices), Effect.result)
      if (Result.isFailure(block)) {
        const { code, message, status } = block.failure.clientError
        return { context: null, receipt: null, refusal: { status, code, message } }
      }
      const { context, receipt } = block.success
      return { context: context ?? null, receipt: renderedReceiptJson(profile.id, receipt), refusal: null }
    })

    /** The job once it has finished, or as it is when the wait runs out. */
    const awaitJob = (jobId: string) =>
      queue.get(jobId).pipe(
        Effect.map(Option.getOrThrow),
        Effect.repeat({
          schedule: Schedule.spaced(WAIT_POLL),
          until: (job) => job.status === "succeeded" || job.status === "failed"
        }),
        Effect.timeoutOption(extraction.timeoutMs + 5000),
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.map(queue.get(jobId), Option.getOrThrow),
            onSome: Effect.succeed
          })
        )
      )

    return handlers
      .handle("list", ({ query }) =>
        profiles.list({
          limit: Math.min(query.limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
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
      .handle("preview", ({ params, payload }) => preview(params.id, payload.message).pipe(Effect.mapError(toApiError)))
      .handle("messages", ({ params, query }) =>
        profiles
          .recentMessages(params.id, {
            limit: Math.min(query.limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
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
          const profile = yield* profiles.find(params.id).pipe(Effect.mapError(toApiError))
          // Ingested text is stored with the job: the `beforeRecord` plugins see it first, as they see turns.
          // A rejection is a 400 here whatever its status: the endpoint documents the statuses it can answer.
          const [document] = yield* host
            .beforeRecord([{ role: "user", content: payload.data, toolCalls: null, toolCallId: null }])
            .pipe(
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
