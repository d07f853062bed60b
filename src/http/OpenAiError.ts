import { Schema } from "effect"
import { HttpServerResponse } from "effect/http"

/**
 * Every error the service returns has the OpenAI shape `{"error": {"message", "type", "code", "param"}}`,
 * so the official SDKs surface `status`, `code` and `message` the same way they do for the provider.
 */
export const ErrorDetail = Schema.Struct({
  message: Schema.String,
  type: Schema.String,
  code: Schema.String,
  param: Schema.NullOr(Schema.String)
})
export type ErrorDetail = typeof ErrorDetail.Type

const errorFields = { error: ErrorDetail }

/** The OpenAI error `type` for a status. */
export const errorTypeFor = (status: number): string => {
  if (status === 401) return "authentication_error"
  if (status === 403) return "permission_error"
  if (status === 404) return "not_found_error"
  if (status === 429) return "rate_limit_error"
  if (status >= 500) return "server_error"
  return "invalid_request_error"
}

const detail = (status: number, code: string, message: string, param?: string): ErrorDetail => ({
  message,
  type: errorTypeFor(status),
  code,
  param: param ?? null
})

export class BadRequest extends Schema.Error<BadRequest>("BadRequest")(errorFields, { httpApiStatus: 400 }) {
  static readonly of = (code: string, message: string, param?: string) =>
    new BadRequest({ error: detail(400, code, message, param) })
}

export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(errorFields, { httpApiStatus: 401 }) {
  static readonly of = (code: string, message: string) => new Unauthorized({ error: detail(401, code, message) })
}

export class NotFound extends Schema.Error<NotFound>("NotFound")(errorFields, { httpApiStatus: 404 }) {
  static readonly of = (code: string, message: string) => new NotFound({ error: detail(404, code, message) })
}

export class PayloadTooLarge extends Schema.Error<PayloadTooLarge>("PayloadTooLarge")(errorFields, {
  httpApiStatus: 413
}) {
  static readonly of = (message: string) => new PayloadTooLarge({ error: detail(413, "request_too_large", message) })
}

export class InternalServerError extends Schema.Error<InternalServerError>("InternalServerError")(errorFields, {
  httpApiStatus: 500
}) {}

export class ServiceUnavailable extends Schema.Error<ServiceUnavailable>("ServiceUnavailable")(errorFields, {
  httpApiStatus: 503
}) {
  static readonly of = (code: string, message: string) =>
    new ServiceUnavailable({ error: detail(503, code, message) })
}

/** The same body as a raw response, for errors raised outside `HttpApi` (auth, routing, limits). */
export const errorResponse = (
  status: number,
  code: string,
  message: string,
  options?: { readonly param?: string; readonly headers?: Record<string, string> }
) =>
  HttpServerResponse.jsonUnsafe(
    { error: detail(status, code, message, options?.param) },
    { status, ...(options?.headers === undefined ? {} : { headers: options.headers }) }
  )
