/**
 * How an error is reported to the client that met it. Every tagged error a client can see carries
 * its own report (`clientError`): the HTTP status, the OpenAI error type and code, a message that is
 * safe to show, the offending parameter and the headers to send. The HTTP layer (`http/OpenAiError.ts`)
 * derives the `{"error": {"message", "type", "code", "param"}}` response and the management API's
 * error schema from it and from nothing else.
 *
 * This module sits below every layer that defines errors (domain, pipeline, upstream, plugins, store,
 * auth, rate limits) and knows nothing of HTTP servers, so each of them can state its own row.
 */

export interface ClientError<Status extends number = number> {
  readonly status: Status
  /** The OpenAI error `type` (`invalid_request_error`, `not_found_error`, …). */
  readonly type: string
  readonly code: string
  /** Shown to the client as is: never internal or database error text. */
  readonly message: string
  /** The request field at fault, where there is one. */
  readonly param: string | null
  /** Headers sent with the error (`retry-after`, `www-authenticate`, the provider's relayed headers). */
  readonly headers: Readonly<Record<string, string>>
}

/** An error that says how it is reported to the client. */
export interface ClientFacing<Status extends number = number> {
  readonly clientError: ClientError<Status>
}

/** The OpenAI error `type` for a status, as the official SDKs expect it. */
export const errorTypeFor = (status: number): string => {
  if (status === 401) return "authentication_error"
  if (status === 403) return "permission_error"
  if (status === 404) return "not_found_error"
  if (status === 429) return "rate_limit_error"
  if (status >= 500) return "server_error"
  return "invalid_request_error"
}

export interface ClientErrorOptions {
  readonly param?: string | null | undefined
  /** Overrides the type derived from the status (a provider's own error type). */
  readonly type?: string | null | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** A report; the status literal is kept in the type, so the management API can pick its schema by it. */
export const clientError = <const Status extends number>(
  status: Status,
  code: string,
  message: string,
  options: ClientErrorOptions = {}
): ClientError<Status> => ({
  status,
  type: options.type ?? errorTypeFor(status),
  code,
  message,
  param: options.param ?? null,
  headers: options.headers ?? {}
})

/** A status a client may be given as is; anything else (a plugin's 200, a provider's 302) becomes `fallback`. */
export const errorStatusOr = (status: number, fallback: number): number =>
  status >= 400 && status <= 599 ? status : fallback
