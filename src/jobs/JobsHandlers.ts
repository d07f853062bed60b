import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { pageSize } from "../http/apiFields.ts"
import { toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { JobQueue } from "./JobQueue.ts"
import { JobsGroup } from "./JobsApi.ts"
import { JobWorker } from "./JobWorker.ts"

export const JobsHandlers = HttpApiBuilder.group(
  sliceApi(JobsGroup),
  "jobs",
  Effect.fn(function* (handlers) {
    const queue = yield* JobQueue
    const worker = yield* JobWorker
    return handlers
      .handle("overview", ({ query }) =>
        Effect.all({
          overview: queue.overview({
            status: query.status,
            limit: pageSize(query.limit)
          }),
          worker: worker.stats
        }).pipe(Effect.map(({ overview, worker }) => ({ ...overview, worker })))
      )
      .handle("get", ({ params }) =>
        queue.get(params.jobId).pipe(
          Effect.map((job) => ({ job })),
          Effect.mapError(toApiError)
        )
      )
      .handle("retry", ({ params }) =>
        queue.requeueFailed(params.jobId).pipe(
          Effect.map((job) => ({ job })),
          Effect.mapError(toApiError)
        )
      )
  })
)
