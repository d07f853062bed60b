import { Schema } from "effect"
import { TraitSource } from "./Trait.ts"

/** One change of a trait's value: by hand (`manual`) or by an extraction job. `newValue` null: deleted. */
export class TraitChange extends Schema.Class<TraitChange>("TraitChange")({
  oldValue: Schema.NullOr(Schema.Json),
  newValue: Schema.NullOr(Schema.Json),
  confidence: Schema.NullOr(Schema.Finite),
  source: TraitSource,
  /** The extraction job that made the change, if any. */
  jobId: Schema.NullOr(Schema.String),
  /** The messages the value was extracted from. */
  messageIds: Schema.Array(Schema.String),
  createdAt: Schema.DateTimeUtcFromDate
}) {}

export class SummaryVersion extends Schema.Class<SummaryVersion>("SummaryVersion")({
  version: Schema.Int,
  summary: Schema.String,
  source: TraitSource,
  createdAt: Schema.DateTimeUtcFromDate
}) {}
