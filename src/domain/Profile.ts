import { Schema } from "effect"
import { UserId } from "./UserId.ts"

/** The internal identifier of a profile (a UUID). */
export const ProfileId = Schema.String.pipe(Schema.brand("ProfileId"))
export type ProfileId = typeof ProfileId.Type

/** The caller's own user identifier: the one user-id rule (trimmed, NFC, 1–256 characters, nothing invisible). */
export const ExternalId = UserId

export class Profile extends Schema.Class<Profile>("Profile")({
  id: ProfileId,
  /** The app the profile belongs to (`default` for the environment's keys); its user id is unique there. */
  namespace: Schema.String,
  externalId: Schema.String,
  /** `null` until a summary has been written. */
  summary: Schema.NullOr(Schema.String),
  summaryVersion: Schema.Int,
  summaryUpdatedAt: Schema.NullOr(Schema.DateTimeUtcFromDate),
  createdAt: Schema.DateTimeUtcFromDate,
  updatedAt: Schema.DateTimeUtcFromDate
}) {}

/** A profile as listed: with how much is known and when the user was last active. */
export class ListedProfile extends Schema.Class<ListedProfile>("ListedProfile")({
  ...Profile.fields,
  counts: Schema.Struct({ traits: Schema.Int, memories: Schema.Int, messages: Schema.Int }),
  /** The latest of the profile's last change and its last recorded message. */
  lastActivityAt: Schema.DateTimeUtcFromDate
}) {}

export const MAX_SUMMARY_LENGTH = 20_000

/**
 * The external id of a namespace's shared profile: the knowledge its app shares with every user
 * (`profiles.shared`, one per namespace, created on its first memory). No user id can be it: the
 * user-id rule refuses control characters (`domain/UserId.ts`), while the database takes any 1–256
 * characters. Lookups by user id and every listing leave shared profiles out (`ProfilesRepo`).
 */
export const SHARED_PROFILE_ID = "\u0001shared"
