import { Schema } from "effect"
import { type ClientFacing, clientError } from "./ClientError.ts"

/** A chat request the gateway refuses before calling anyone: answered with 400 and this code. */
export class InvalidChatRequest
  extends Schema.TaggedError<InvalidChatRequest>()("InvalidChatRequest", {
    code: Schema.String,
    message: Schema.String,
    param: Schema.NullOr(Schema.String)
  })
  implements ClientFacing<400>
{
  get clientError() {
    return clientError(400, this.code, this.message, { param: this.param })
  }
}

/**
 * Nothing names the user: not `X-Service-Id`, nor the body fields of the request's API (`bodyFields`,
 * for a route whose body can name one), nor a `resolveUser` plugin.
 */
export class MissingUserId
  extends Schema.TaggedError<MissingUserId>()("MissingUserId", { bodyFields: Schema.optionalKey(Schema.String) })
  implements ClientFacing<400>
{
  get clientError() {
    const where = this.bodyFields === undefined ? "" : ` or the body's ${this.bodyFields}`
    return clientError(400, "missing_user_id", `Identify the user with the X-Service-Id header${where}`)
  }
}

/** No `X-Upstream-Key` and no key configured for the chosen provider. */
export class MissingUpstreamKey
  extends Schema.TaggedError<MissingUpstreamKey>()("MissingUpstreamKey", {
    provider: Schema.String
  })
  implements ClientFacing<401>
{
  get clientError() {
    return clientError(
      401,
      "missing_upstream_key",
      `No key for the ${this.provider} upstream: send X-Upstream-Key or configure UPSTREAM_API_KEY`
    )
  }
}
