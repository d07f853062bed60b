import { Effect, Option } from "effect"
import type { ApiAdapter } from "../apis/ApiAdapter.ts"
import type { ChatRequest } from "../apis/ChatRequest.ts"
import { MissingUserId } from "../domain/requestErrors.ts"
import { RequestIdentity } from "../identity/RequestIdentity.ts"
import { requestStage } from "../observability/requestSpan.ts"

/**
 * Stage 1: whose request this is, by `RequestIdentity` (the one way every route knows it): the id
 * the request names (header, `user`, `metadata.profile_id`), as the `resolveUser` plugins leave it
 * and checked by the user-id rule, in the key's namespace, within the user's rate limit.
 */
export const makeResolveUser = Effect.gen(function* () {
  const identity = yield* RequestIdentity
  return Effect.fnUntraced(function* (
    adapter: ApiAdapter,
    request: ChatRequest,
    headers: Readonly<Record<string, string | undefined>>
  ) {
    const user = yield* identity.resolve({ headers, body: request.body, claimed: request.userId })
    // The 400 names the fields the adapter's API names its user with.
    if (Option.isNone(user)) return yield* new MissingUserId({ bodyFields: adapter.userFields })
    return user.value
  }, requestStage("pipeline.resolveUser"))
})
