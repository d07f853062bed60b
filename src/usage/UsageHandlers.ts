import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { currentNamespace } from "../domain/Namespace.ts"
import { toApiError } from "../http/OpenAiError.ts"
import { sliceApi } from "../http/sliceApi.ts"
import { Usage } from "./Usage.ts"
import { UsageGroup } from "./UsageApi.ts"

export const UsageHandlers = HttpApiBuilder.group(
  sliceApi(UsageGroup),
  "usage",
  Effect.fn(function* (handlers) {
    const usage = yield* Usage
    return handlers.handle("report", ({ query }) =>
      Effect.flatMap(currentNamespace, (scope) =>
        usage.report(query.groupBy ?? "day", query, { scope, userId: query.userId, keyId: query.keyId })
      ).pipe(Effect.mapError(toApiError))
    )
  })
)
