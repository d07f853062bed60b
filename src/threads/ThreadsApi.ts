import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Message } from "../domain/Message.ts"
import { ApiValidation } from "../http/ApiValidation.ts"
import { ProfileRef } from "../http/apiFields.ts"
import { NotFound } from "../http/OpenAiError.ts"
import { ThreadSummary } from "./ThreadsRepo.ts"

/** `/api/profiles/{id}/threads`: the threads the gateway keeps for a user's chat completions. */
export class ThreadsGroup extends HttpApiGroup.make("threads")
  .add(
    HttpApiEndpoint.get("list", "/:id/threads", {
      params: ProfileRef,
      success: Schema.Struct({ threads: Schema.Array(ThreadSummary) }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List a profile's threads",
        description: "Each thread (`X-Service-Thread-Id`) with its number of messages, first and last use; latest first"
      })
    ),
    HttpApiEndpoint.get("get", "/:id/threads/:threadId", {
      params: { ...ProfileRef, threadId: Schema.String },
      success: Schema.Struct({ threadId: Schema.String, messages: Schema.Array(Message) }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({ summary: "Read a thread", description: "Every message of the thread, oldest first" })
    )
  )
  .prefix("/api/profiles")
  .middleware(ApiValidation)
  .annotateMerge(
    OpenApi.annotations({
      description: "The conversations the gateway keeps for chat completions (X-Service-Thread-Id)"
    })
  ) {}
