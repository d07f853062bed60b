import { Schema, SchemaGetter } from "effect"
import { normalizeUserId, userIdProblem } from "./UserId.ts"

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const isUuid = (s: string): boolean => uuidPattern.test(s)

/**
 * `{id}` in an `/api` path, decoded as trimmed NFC text: a UUID, which always means the profile with
 * that internal id (never an external id that looks the same), or an external id under the user-id rule.
 */
export const ProfileRefParam = Schema.String.pipe(
  Schema.decodeTo(
    Schema.String.check(
      Schema.makeFilter((ref: string) => isUuid(ref) || (userIdProblem(ref) ?? true), {
        expected: "a profile's UUID or an external id of 1 to 256 characters without control, format or separator characters"
      })
    ),
    { decode: SchemaGetter.transform(normalizeUserId), encode: SchemaGetter.passthrough() }
  )
)
