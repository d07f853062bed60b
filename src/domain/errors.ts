import { Schema } from "effect"
import { type ClientFacing, clientError } from "./ClientError.ts"

export class ProfileNotFound
  extends Schema.TaggedError<ProfileNotFound>()("ProfileNotFound", {
    /** The external id or UUID the caller used. */
    ref: Schema.String
  })
  implements ClientFacing<404>
{
  get clientError() {
    return clientError(404, "profile_not_found", `No profile with id or external id '${this.ref}'`)
  }
}

export class TraitNotFound
  extends Schema.TaggedError<TraitNotFound>()("TraitNotFound", {
    key: Schema.String
  })
  implements ClientFacing<404>
{
  get clientError() {
    return clientError(404, "trait_not_found", `The profile has no trait '${this.key}'`)
  }
}

export class MemoryNotFound
  extends Schema.TaggedError<MemoryNotFound>()("MemoryNotFound", {
    memoryId: Schema.String
  })
  implements ClientFacing<404>
{
  get clientError() {
    return clientError(404, "memory_not_found", `The profile has no memory '${this.memoryId}'`)
  }
}

export class JobNotFound
  extends Schema.TaggedError<JobNotFound>()("JobNotFound", {
    jobId: Schema.String
  })
  implements ClientFacing<404>
{
  get clientError() {
    return clientError(404, "job_not_found", `No job '${this.jobId}'`)
  }
}

/** An operator asked to retry a job that has not failed (it is waiting, running, or done). */
export class JobNotFailed
  extends Schema.TaggedError<JobNotFailed>()("JobNotFailed", {
    jobId: Schema.String,
    status: Schema.String
  })
  implements ClientFacing<409>
{
  get clientError() {
    return clientError(409, "job_not_failed", `Job '${this.jobId}' is ${this.status}: only a failed job can be retried`)
  }
}

/** A trait value that does not match the trait's declared or established type. */
export class InvalidTraitValue
  extends Schema.TaggedError<InvalidTraitValue>()("InvalidTraitValue", {
    key: Schema.String,
    reason: Schema.String
  })
  implements ClientFacing<400>
{
  get clientError() {
    return clientError(400, "invalid_trait_value", `Invalid value for trait '${this.key}': ${this.reason}`, {
      param: "value"
    })
  }
}

/** A memory named as superseded (replaced by a newer one) is not one of the profile's memories. */
export class UnknownSupersededMemory
  extends Schema.TaggedError<UnknownSupersededMemory>()("UnknownSupersededMemory", {
    memoryIds: Schema.Array(Schema.String)
  })
  implements ClientFacing<400>
{
  get clientError() {
    // The first few are enough to find the mistake; an import may name hundreds.
    return clientError(
      400,
      "invalid_supersedes",
      `supersedes names memories this profile does not have: ${this.memoryIds.slice(0, 5).join(", ")}`,
      { param: "supersedes" }
    )
  }
}

/** An imported memory's creation time is in the future (by more than clocks differ). */
export class CreatedInFuture
  extends Schema.TaggedError<CreatedInFuture>()("CreatedInFuture", {
    /** The memory's place in the import. */
    index: Schema.Int
  })
  implements ClientFacing<400>
{
  get clientError() {
    return clientError(400, "invalid_created_at", `memories[${this.index}].createdAt is in the future`, {
      param: `memories.${this.index}.createdAt`
    })
  }
}

/** A new profile's external id is another profile's internal id: a path naming that UUID would be ambiguous. */
export class ExternalIdConflict
  extends Schema.TaggedError<ExternalIdConflict>()("ExternalIdConflict", {
    externalId: Schema.String
  })
  implements ClientFacing<400>
{
  get clientError() {
    return clientError(
      400,
      "invalid_external_id",
      `externalId '${this.externalId}' is the internal id of another profile; choose another id`,
      { param: "externalId" }
    )
  }
}

/** A memory's category is not one of its namespace's (`/api/namespaces/{name}/settings`). */
export class UnknownMemoryCategory
  extends Schema.TaggedError<UnknownMemoryCategory>()("UnknownMemoryCategory", {
    category: Schema.String,
    namespace: Schema.String,
    known: Schema.Array(Schema.String)
  })
  implements ClientFacing<400>
{
  get clientError() {
    const known = this.known.length === 0 ? "it declares none" : `its categories: ${this.known.slice(0, 20).join(", ")}`
    return clientError(
      400,
      "unknown_category",
      `category '${this.category}' is not one of namespace '${this.namespace}''s memory categories (${known})`,
      { param: "category" }
    )
  }
}

/** A memory's expiry is not in the future: it would never be injected, and be gone at the next sweep. */
export class ExpiryInPast
  extends Schema.TaggedError<ExpiryInPast>()("ExpiryInPast", {
    /** Where it is in the body (`expiresAt`, `memories.3.expiresAt`). */
    param: Schema.String
  })
  implements ClientFacing<400>
{
  get clientError() {
    return clientError(400, "invalid_expires_at", `${this.param} must be in the future (null: never expires)`, {
      param: this.param
    })
  }
}
