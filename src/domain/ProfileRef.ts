import { normalizedIdText, USER_ID_EXPECTATION, userIdProblem } from "./UserId.ts"
import { isUuid } from "./Uuid.ts"

/**
 * `{id}` in an `/api` path, decoded as trimmed NFC text: a UUID, which always means the profile with
 * that internal id (never an external id that looks the same), or an external id under the user-id rule.
 */
export const ProfileRefParam = normalizedIdText(
  (ref) => (isUuid(ref) ? undefined : userIdProblem(ref)),
  `a profile's UUID or an external id ${USER_ID_EXPECTATION}`
)
