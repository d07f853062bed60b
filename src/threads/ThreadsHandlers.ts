import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { ThreadsGroup } from "./ThreadsApi.ts"
import { ThreadNotFound, ThreadsRepo } from "./ThreadsRepo.ts"

export const ThreadsHandlers = HttpApiBuilder.group(
  sliceApi(ThreadsGroup),
  "threads",
  Effect.fn(function* (handlers) {
    const profiles = yield* Profiles
    const threads = yield* ThreadsRepo
    return handlers
      .handle("list", ({ params }) =>
        profiles.find(params.id).pipe(
          Effect.flatMap((profile) => threads.list(profile.id)),
          Effect.map((list) => ({ threads: list })),
          Effect.mapError(toApiError)
        )
      )
      .handle("get", ({ params }) =>
        profiles.find(params.id).pipe(
          Effect.flatMap((profile) => threads.messages(profile.id, params.threadId)),
          Effect.flatMap((messages) =>
            messages.length === 0
              ? Effect.fail(new ThreadNotFound({ threadId: params.threadId }))
              : Effect.succeed({ threadId: params.threadId, messages })
          ),
          Effect.mapError(toApiError)
        )
      )
  })
)
