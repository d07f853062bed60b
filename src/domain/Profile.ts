import { Schema } from "effect"

/** The internal identifier of a profile (a UUID). */
export const ProfileId = Schema.String.pipe(Schema.brand("ProfileId"))
export type ProfileId = typeof ProfileId.Type

const controlCharacters = /[\u0000-\u001f\u007f]/

/** The caller's own user identifier: trimmed, 1–256 characters, no control characters. */
export const ExternalId = Schema.Trim.check(
  Schema.isBetweenLength(1, 256, { expected: "a string of 1 to 256 characters after trimming" }),
  Schema.makeFilter((s: string) => !controlCharacters.test(s), { expected: "a string without control characters" })
)

export class Profile extends Schema.Class<Profile>("Profile")({
  id: ProfileId,
  externalId: Schema.String,
  /** `null` until a summary has been written. */
  summary: Schema.NullOr(Schema.String),
  summaryVersion: Schema.Int,
  summaryUpdatedAt: Schema.NullOr(Schema.DateTimeUtcFromDate),
  createdAt: Schema.DateTimeUtcFromDate,
  updatedAt: Schema.DateTimeUtcFromDate
}) {}

export const MAX_SUMMARY_LENGTH = 20_000
