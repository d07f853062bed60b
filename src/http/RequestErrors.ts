import { Schema } from "effect"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"

/**
 * Failures of the HTTP server itself, met before or around the handlers (an unknown route, a body
 * over the limit, a response the framework made by itself, a defect), each with its client report.
 */

export class UnknownRoute
  extends Schema.TaggedError<UnknownRoute>()("UnknownRoute", {
    method: Schema.String,
    path: Schema.String
  })
  implements ClientFacing<404>
{
  get clientError() {
    return clientError(404, "not_found", `Unknown route: ${this.method} ${this.path}`)
  }
}

export class RequestTooLarge
  extends Schema.TaggedError<RequestTooLarge>()("RequestTooLarge", {
    /** The body limit of the path, in bytes. */
    limit: Schema.Int
  })
  implements ClientFacing<413>
{
  get clientError() {
    return clientError(413, "request_too_large", `The request body exceeds the limit of ${this.limit} bytes`)
  }
}

/** The body could not be read (the connection broke, a bad encoding). */
export class UnreadableRequest
  extends Schema.TaggedError<UnreadableRequest>()("UnreadableRequest", {})
  implements ClientFacing<400>
{
  get clientError() {
    return clientError(400, "invalid_request", "The request could not be read")
  }
}

/** A defect or an unexpected failure: what went wrong is logged with the request id, never returned. */
export class InternalError
  extends Schema.TaggedError<InternalError>()("InternalError", {
    requestId: Schema.String
  })
  implements ClientFacing<500>
{
  get clientError() {
    return clientError(500, "internal_error", `Internal server error (request id ${this.requestId})`)
  }
}

const codeForStatus: Readonly<Record<number, string>> = {
  404: "not_found",
  405: "method_not_allowed",
  413: "request_too_large",
  415: "unsupported_media_type"
}

/**
 * An error response the framework made by itself (an empty 404, a text 415, a 405), given our shape.
 * Its text is kept for a 4xx only: a 5xx body may carry internal detail.
 */
export class FrameworkRefusal
  extends Schema.TaggedError<FrameworkRefusal>()("FrameworkRefusal", {
    status: Schema.Int,
    /** The framework's own response text, when it has one. */
    text: Schema.String,
    method: Schema.String,
    path: Schema.String
  })
  implements ClientFacing
{
  get clientError() {
    if (this.status === 404 && this.text === "")
      return new UnknownRoute({ method: this.method, path: this.path }).clientError
    const code = codeForStatus[this.status] ?? (this.status >= 500 ? "internal_error" : "invalid_request")
    const text = this.status < 500 && this.text !== "" ? this.text : `Request failed with status ${this.status}`
    const hint = this.status === 415 ? "; send JSON with 'Content-Type: application/json'" : ""
    return clientError(this.status, code, text + hint)
  }
}
