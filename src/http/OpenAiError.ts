import { Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { type ClientError, type ClientFacing, clientError } from "../domain/ClientError.ts"

/**
 * The error body a client reads: OpenAI's `{"error": {…}}` or Anthropic's
 * `{"type": "error", "error": {…}}` (its SDKs parse only their own). Which one a request gets:
 * `apis/errorFormat.ts`.
 */
export type ErrorFormat = "openai" | "anthropic"

/**
 * Every error the service returns has the OpenAI shape `{"error": {"message", "type", "code", "param"}}`
 * (Anthropic's, with the same fields inside, for Anthropic's clients: `errorFormatOf`), so the official
 * SDKs surface `status`, `code` and `message` the same way they do for the provider.
 * Each error states its own status, type and code (`ClientFacing`, see `domain/ClientError.ts`); this
 * module is the one place that turns that into a response: a raw one (`errorResponse`) for the proxy,
 * auth, limits and routing, or a management API error (`toApiError`) whose schema sets the status.
 */
export const ErrorDetail = Schema.Struct({
  message: Schema.String,
  type: Schema.String,
  code: Schema.String,
  param: Schema.NullOr(Schema.String)
})
export type ErrorDetail = typeof ErrorDetail.Type

const detailOf = ({ code, message, param, type }: ClientError): ErrorDetail => ({ message, type, code, param })

// ---- the management API: one error schema per status, chosen by the error's own status ----------
// Each class also has its status as a member: that makes each its own type, so a handler that could
// answer a status its endpoint does not declare fails to compile instead of answering 500.

const errorFields = { error: ErrorDetail }

export class BadRequest extends Schema.Error<BadRequest>("BadRequest")(errorFields, { httpApiStatus: 400 }) {
  get status() {
    return 400 as const
  }
  static readonly of = (code: string, message: string, param?: string) =>
    new BadRequest({ error: detailOf(clientError(400, code, message, { param })) })
}

export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(errorFields, { httpApiStatus: 401 }) {
  get status() {
    return 401 as const
  }
}

export class Forbidden extends Schema.Error<Forbidden>("Forbidden")(errorFields, { httpApiStatus: 403 }) {
  get status() {
    return 403 as const
  }
}

export class NotFound extends Schema.Error<NotFound>("NotFound")(errorFields, { httpApiStatus: 404 }) {
  get status() {
    return 404 as const
  }
}

export class Conflict extends Schema.Error<Conflict>("Conflict")(errorFields, { httpApiStatus: 409 }) {
  get status() {
    return 409 as const
  }
}

export class PayloadTooLarge extends Schema.Error<PayloadTooLarge>("PayloadTooLarge")(errorFields, {
  httpApiStatus: 413
}) {
  get status() {
    return 413 as const
  }
  static readonly of = (message: string) =>
    new PayloadTooLarge({ error: detailOf(clientError(413, "request_too_large", message)) })
}

export class InternalServerError extends Schema.Error<InternalServerError>("InternalServerError")(errorFields, {
  httpApiStatus: 500
}) {
  get status() {
    return 500 as const
  }
}

export class ServiceUnavailable extends Schema.Error<ServiceUnavailable>("ServiceUnavailable")(errorFields, {
  httpApiStatus: 503
}) {
  get status() {
    return 503 as const
  }
  static readonly of = (code: string, message: string) =>
    new ServiceUnavailable({ error: detailOf(clientError(503, code, message)) })
}

const apiErrors = {
  400: BadRequest,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  413: PayloadTooLarge,
  500: InternalServerError,
  503: ServiceUnavailable
} as const

/** The statuses the management API has an error schema for. */
export type ApiStatus = keyof typeof apiErrors

/** The management API error an error becomes: `NotFound` for a `ClientFacing<404>`, and so on. */
export type ApiErrorOf<E> =
  E extends ClientFacing<infer Status extends ApiStatus> ? InstanceType<(typeof apiErrors)[Status]> : never

/** An error as the management API reports it (without headers: none of these errors carries them); use `Effect.mapError(toApiError)`. */
export const toApiError = <E extends ClientFacing<ApiStatus>>(error: E): ApiErrorOf<E> => {
  const report = error.clientError
  const ApiError = apiErrors[report.status]
  return new ApiError({ error: detailOf(report) }) as ApiErrorOf<E>
}

/** Anthropic names its error types as OpenAI does, but for a server error and a body too large. */
const anthropicType = ({ status, type }: ClientError): string => {
  if (type === "server_error") return status === 503 || status === 529 ? "overloaded_error" : "api_error"
  if (status === 413 && type === "invalid_request_error") return "request_too_large"
  return type
}

const bodyOf = (report: ClientError, format: ErrorFormat) =>
  format === "anthropic"
    ? { type: "error", error: { ...detailOf(report), type: anthropicType(report) } }
    : { error: detailOf(report) }

/** The response to an error raised outside `HttpApi` (the proxy, auth, limits, routing), headers included. */
export const errorResponse = (
  error: ClientFacing,
  format: ErrorFormat = "openai"
): HttpServerResponse.HttpServerResponse => {
  const report = error.clientError
  return HttpServerResponse.jsonUnsafe(bodyOf(report, format), { status: report.status, headers: report.headers })
}
