import { Effect, Predicate, Result } from "effect"
import type { ExternalIdConflict } from "../domain/errors.ts"
import { InvalidChatRequest } from "../domain/requestErrors.ts"
import { decodeHeaderText, parseUserId } from "../domain/UserId.ts"

/** The header an app names its user with. */
export const USER_HEADER = "x-service-id"

const invalidUserId = (message: string, param: string | null) =>
  new InvalidChatRequest({ code: "invalid_user_id", message, param })

/**
 * A user id as the gateway accepts it, by the one user-id rule (src/domain/UserId.ts): the id
 * trimmed and in NFC, or 400 `invalid_user_id` (blank, too long, or with control, format, bidi or
 * separator characters). Also applied to the id a `resolveUser` plugin returns.
 */
export const checkUserId = (value: string, source: string): Effect.Effect<string, InvalidChatRequest> =>
  Result.match(parseUserId(value), {
    onSuccess: Effect.succeed,
    onFailure: (problem) => Effect.fail(invalidUserId(`${source} ${problem}`, source))
  })

/**
 * The user id a request names, by precedence: header `X-Service-Id` (its bytes read as UTF-8), then
 * the body's sources in order (chat and responses: `safety_identifier`, `user`, `metadata.profile_id`;
 * messages: `metadata.user_id`). The first source present decides: a blank or invalid one is refused,
 * never skipped for the next. Routes whose body names nobody pass no sources.
 */
export const claimedUserId = (
  headers: Readonly<Record<string, string | undefined>>,
  sources: ReadonlyArray<readonly [string, unknown]> = []
): Effect.Effect<string | undefined, InvalidChatRequest> => {
  const header = headers[USER_HEADER]
  const candidates: ReadonlyArray<readonly [string, unknown]> = [
    ["X-Service-Id", header === undefined ? undefined : decodeHeaderText(header)],
    ...sources
  ]
  for (const [source, value] of candidates) {
    if (value === undefined || value === null) continue
    if (!Predicate.isString(value)) return Effect.fail(invalidUserId(`${source} must be a string`, source))
    return checkUserId(value, source)
  }
  return Effect.succeed(undefined)
}

/** A user id that is another profile's internal id: refused when its profile would be created. */
export const takenUserId = (conflict: ExternalIdConflict): InvalidChatRequest =>
  invalidUserId(`The user id '${conflict.externalId}' is the internal id of another profile; use another id`, null)
