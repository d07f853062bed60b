import { Result, Schema } from "effect"
import { type ClientFacing, clientError, errorStatusOr } from "../domain/ClientError.ts"

/** The provider answered with an error status before any byte reached the client. */
export class UpstreamError
  extends Schema.TaggedError<UpstreamError>()("UpstreamError", {
    status: Schema.Int,
    /** The provider's own message, with anything key-like redacted. */
    message: Schema.String,
    upstreamType: Schema.NullOr(Schema.String),
    upstreamCode: Schema.NullOr(Schema.String),
    param: Schema.NullOr(Schema.String),
    /** Provider headers worth relaying with the error (`retry-after`, rate limits, request id). */
    headers: Schema.Record(Schema.String, Schema.String)
  })
  implements ClientFacing
{
  /** The provider's status is kept (a 429 stays a 429 with its retry-after); its own code is named in the message. */
  get clientError() {
    const suffix = this.upstreamCode === null ? "" : ` (upstream code: ${this.upstreamCode})`
    return clientError(errorStatusOr(this.status, 502), "upstream_error", `${this.message}${suffix}`, {
      type: this.upstreamType,
      param: this.param,
      headers: this.headers
    })
  }
}

/** The provider could not be reached (DNS, refused, reset before a response). */
export class UpstreamUnreachable
  extends Schema.TaggedError<UpstreamUnreachable>()("UpstreamUnreachable", {
    message: Schema.String
  })
  implements ClientFacing<502>
{
  get clientError() {
    return clientError(502, "upstream_unreachable", this.message)
  }
}

/** No response headers (or, streaming, no next chunk) within the configured time. */
export class UpstreamTimeout
  extends Schema.TaggedError<UpstreamTimeout>()("UpstreamTimeout", {
    message: Schema.String
  })
  implements ClientFacing<504>
{
  get clientError() {
    return clientError(504, "upstream_timeout", this.message)
  }
}

/** A request the chosen provider cannot honour (e.g. `n > 1` on Anthropic). */
export class UnsupportedParameter
  extends Schema.TaggedError<UnsupportedParameter>()("UnsupportedParameter", {
    param: Schema.String,
    message: Schema.String
  })
  implements ClientFacing<400>
{
  get clientError() {
    return clientError(400, "unsupported_parameter", this.message, { param: this.param })
  }
}

/**
 * A failure after the response started (the provider's, or the end of the gateway's shutdown drain):
 * reported in-band, the stream then ends without `[DONE]`.
 */
export class UpstreamStreamError extends Schema.TaggedError<UpstreamStreamError>()("UpstreamStreamError", {
  code: Schema.Literals(["upstream_stream_error", "upstream_timeout", "server_shutting_down"]),
  message: Schema.String
}) {}

export type UpstreamFailure = UpstreamError | UpstreamUnreachable | UpstreamTimeout | UnsupportedParameter

/**
 * Provider messages sometimes echo the key, whole or in part ("Incorrect API key provided:
 * sk-ab***yz"). Every given secret is redacted whatever its length (a short key is still a key),
 * longest first so a key inside another is not left half visible; key-like strings go too.
 */
export const redactSecrets = (text: string, secrets: ReadonlyArray<string> = []): string => {
  let redacted = text
  for (const secret of [...secrets].filter((s) => s !== "").sort((a, b) => b.length - a.length)) {
    redacted = redacted.replaceAll(secret, "[redacted]")
  }
  return redacted.replace(/\b(sk|pk|rk|key)[-_][A-Za-z0-9_\-*.]{6,}/g, "[redacted]")
}

/** Refuses one parameter of a request the provider cannot take (for the translators' `Result`s). */
export const unsupported = (param: string, message: string) => Result.fail(new UnsupportedParameter({ param, message }))

/**
 * A field a translator reads from a client's request: it may be absent or `null` (OpenAI's SDKs send
 * `null` for unset options), and means the same either way.
 */
export const Optional = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))
