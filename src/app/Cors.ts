import type { Effect } from "effect"
import { HttpMiddleware, type HttpServerRequest, type HttpServerResponse } from "effect/http"
import {
  BUDGET_HEADER,
  CONTEXT_HEADER,
  MEMORY_HEADER,
  OVERHEAD_HEADER,
  REQUEST_ID_HEADER,
  UPSTREAM_HEADER
} from "../http/serviceHeaders.ts"
import { isCorsPath, type PathClass } from "./pathKind.ts"

/** What a browser app may read of a response: the gateway's headers, the rate limits, the provider's request ids. */
const EXPOSED_HEADERS = [
  CONTEXT_HEADER,
  OVERHEAD_HEADER,
  MEMORY_HEADER,
  REQUEST_ID_HEADER,
  BUDGET_HEADER,
  UPSTREAM_HEADER,
  "x-ratelimit-limit-requests",
  "x-ratelimit-remaining-requests",
  "x-ratelimit-reset-requests",
  "retry-after",
  "x-request-id",
  "request-id"
]

/** Wraps the handling of a request to `path` (its preflight answered, its response given CORS headers). */
export type CorsPolicy = <E, R>(
  path: PathClass,
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>

/** No CORS: a browser on another origin can neither preflight nor read a response. */
export const noCors: CorsPolicy = (_path, app) => app

/**
 * CORS for `/v1` and `/api`, off while `CORS_ORIGINS` is empty. A preflight is answered here, before
 * the key check (browsers send it without credentials); every other response gets the origin and
 * exposed headers. Requested headers are allowed as asked (the origin is what is restricted: SDKs send
 * their own `x-stainless-*` and `anthropic-*` headers), and cookies never are: the gateway
 * authenticates with headers, so `*` cannot hand a browser's cookies to another site.
 */
export const corsFor = (origins: ReadonlyArray<string>): CorsPolicy => {
  if (origins.length === 0) return noCors
  const cors = HttpMiddleware.cors({
    allowedOrigins: origins.includes("*") ? [] : origins,
    allowedMethods: ["GET", "HEAD", "PUT", "PATCH", "POST", "DELETE"],
    exposedHeaders: EXPOSED_HEADERS,
    credentials: false,
    maxAge: 600
  })
  return (path, app) => (isCorsPath(path) ? cors(app) : app)
}
