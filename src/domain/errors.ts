import { Schema } from "effect"

export class ProfileNotFound extends Schema.TaggedError<ProfileNotFound>()("ProfileNotFound", {
  /** The external id or UUID the caller used. */
  ref: Schema.String
}) {}

export class TraitNotFound extends Schema.TaggedError<TraitNotFound>()("TraitNotFound", {
  key: Schema.String
}) {}

export class MemoryNotFound extends Schema.TaggedError<MemoryNotFound>()("MemoryNotFound", {
  memoryId: Schema.String
}) {}

/** A trait value that does not match the trait's declared or established type. */
export class InvalidTraitValue extends Schema.TaggedError<InvalidTraitValue>()("InvalidTraitValue", {
  key: Schema.String,
  reason: Schema.String
}) {}

/** A memory named as superseded (replaced by a newer one) is not one of the profile's memories. */
export class UnknownSupersededMemory extends Schema.TaggedError<UnknownSupersededMemory>()("UnknownSupersededMemory", {
  memoryIds: Schema.Array(Schema.String)
}) {}

/** A new profile's external id is another profile's internal id: a path naming that UUID would be ambiguous. */
export class ExternalIdConflict extends Schema.TaggedError<ExternalIdConflict>()("ExternalIdConflict", {
  externalId: Schema.String
}) {}
