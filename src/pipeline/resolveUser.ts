import { Effect } from "effect"
import type { ChatRequest, ProxiedApi } from "../apis/ChatRequest.ts"
import { MissingUserId } from "../domain/requestErrors.ts"
import { namespacedUser } from "../namespaces/Namespace.ts"
import { requestStage } from "../observability/requestSpan.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { checkUserId } from "./readRequest.ts"

/** The body fields each API names its user with (what the 400 tells a client that named none). */
const USER_FIELDS: Record<ProxiedApi, string> = {
  "chat.completions": "`safety_identifier`, `user` or `metadata.profile_id`",
  responses: "`safety_identifier`, `user` or `metadata.profile_id`",
  messages: "`metadata.user_id`"
}

/**
 * Stage 1: whose request this is. The id the request names (header, `user`, `metadata.profile_id`),
 * as the `resolveUser` plugins leave it and checked by the user-id rule, then the user's rate limit.
 */
export const makeResolveUser = Effect.gen(function* () {
  const host = yield* PluginHost
  const rateLimiter = yield* RateLimiter
  return Effect.fnUntraced(function* (
    request: ChatRequest,
    headers: Readonly<Record<string, string | undefined>>,
    namespace: string
  ) {
    const resolved = yield* host.resolveUser({ headers, body: request.body, userId: request.userId })
    if (resolved === undefined) return yield* new MissingUserId({ bodyFields: USER_FIELDS[request.api] })
    // A plugin's answer meets the same rule as the request's own id.
    const userId = resolved === request.userId ? resolved : yield* checkUserId(resolved, "the resolved user id")
    yield* rateLimiter.takeUser(namespacedUser(namespace, userId))
    return userId
  }, requestStage("pipeline.resolveUser"))
})
