import type {
  ExternalIdConflict,
  InvalidTraitValue,
  MemoryNotFound,
  ProfileNotFound,
  TraitNotFound,
  UnknownSupersededMemory
} from "../../domain/errors.ts"
import { BadRequest, NotFound } from "../OpenAiError.ts"

/** How each domain failure is reported over HTTP; use with `Effect.catchTags`. */
export const profileNotFound = (error: ProfileNotFound) =>
  NotFound.of("profile_not_found", `No profile with id or external id '${error.ref}'`)

export const externalIdConflict = (error: ExternalIdConflict) =>
  BadRequest.of(
    "invalid_external_id",
    `externalId '${error.externalId}' is the internal id of another profile; choose another id`,
    "externalId"
  )

export const traitNotFound = (error: TraitNotFound) =>
  NotFound.of("trait_not_found", `The profile has no trait '${error.key}'`)

export const memoryNotFound = (error: MemoryNotFound) =>
  NotFound.of("memory_not_found", `The profile has no memory '${error.memoryId}'`)

export const invalidTraitValue = (error: InvalidTraitValue) =>
  BadRequest.of("invalid_trait_value", `Invalid value for trait '${error.key}': ${error.reason}`, "value")

export const unknownSupersededMemory = (error: UnknownSupersededMemory) =>
  BadRequest.of(
    "invalid_supersedes",
    `supersedes names memories this profile does not have: ${error.memoryIds.slice(0, 5).join(", ")}`,
    "supersedes"
  )
