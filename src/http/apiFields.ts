import { Schema } from "effect"
import { ProfileRefParam } from "../domain/ProfileRef.ts"

/**
 * The pieces every group of the management API shares (each group declares itself beside its feature;
 * `Api.ts` assembles them): paging, the `{id}` of a profile, the bare success body.
 */

/** The most records one list call returns; larger `limit`s are capped to it. */
export const MAX_PAGE_SIZE = 100
const DEFAULT_PAGE_SIZE = 20

export const Limit = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
export const Offset = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** A list call's page size: its `limit`, or the default, and never above the cap. */
export const pageSize = (limit: number | undefined): number => Math.min(limit ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)

/** `{id}`: the profile's internal UUID (a UUID always means that), or the caller's external id. */
export const ProfileRef = { id: ProfileRefParam }

export const Success = Schema.Struct({ success: Schema.Literal(true) })
