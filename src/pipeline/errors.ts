import { Schema } from "effect"

/** A chat request the gateway refuses before calling anyone: answered with 400 and this code. */
export class InvalidChatRequest extends Schema.TaggedError<InvalidChatRequest>()("InvalidChatRequest", {
  code: Schema.String,
  message: Schema.String,
  param: Schema.NullOr(Schema.String)
}) {}

/** Neither `X-Service-Id`, `user` nor `metadata.profile_id` names the user. */
export class MissingUserId extends Schema.TaggedError<MissingUserId>()("MissingUserId", {}) {}

/** No `X-Upstream-Key` and no key configured for the chosen provider. */
export class MissingUpstreamKey extends Schema.TaggedError<MissingUpstreamKey>()("MissingUpstreamKey", {
  provider: Schema.String
}) {}
