import { Effect, Option } from "effect"
import type { ChatRequest, ProxiedApi } from "../apis/ChatRequest.ts"
import { MissingUserId } from "../domain/requestErrors.ts"
import { RequestIdentity } from "../identity/RequestIdentity.ts"
import { requestStage } from "../observability/requestSpan.ts"

/** The body fields each API names its user with (what the 400 tells a client that named none). */
const USER_FIELDS: Record<ProxiedApi, string> = {
  "chat.completions": "`safety_identifier`, `user` or `metadata.profile_id`",
  responses: "`safety_identifier`, `user` or `metadata.profile_id`",
  messages: "`metadata.user_id`"
}

/**
 * Stage 1: whose request this is, by `RequestIdentity` (the one way every route knows it): the id
 * the request names (header, `user`, `metadata.profile_id`), as the `resolveUser` plugins leave it
 * and checked by the user-id rule, in the key's namespace, within the user's rate limit.
 */
export const makeResolveUser = Effect.gen(function* () {
  const identity = yield* RequestIdentity
  return Effect.fnUntraced(function* (request: ChatRequest, headers: Readonly<Record<string, string | undefined>>) {
    const user = yield* identity.resolve({ headers, body: request.body, claimed: request.userId })
    if (Option.isNone(user)) return yield* new MissingUserId({ bodyFields: USER_FIELDS[request.api] })
    return user.value
  }, requestStage("pipeline.resolveUser"))
})
