import { randomUUID } from "node:crypto"
import { ByteSize, Cause, Context, Effect, Metric } from "effect"
import {
  HttpIncomingMessage,
  HttpMiddleware,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "effect/http"
import type { IpNetwork } from "effect/net"
import { errorFormatOf } from "../apis/errorFormat.ts"
import type { ServiceAuth } from "../auth/ServiceAuth.ts"
import { CurrentNamespace } from "../domain/Namespace.ts"
import { errorResponse } from "../http/OpenAiError.ts"
import {
  FrameworkRefusal,
  InternalError,
  RequestTooLarge,
  UnknownRoute,
  UnreadableRequest
} from "../http/RequestErrors.ts"
import { pathOf } from "../http/requestPath.ts"
import { REQUEST_ID_HEADER } from "../http/serviceHeaders.ts"
import { CurrentKey } from "../keys/CurrentKey.ts"
import { sessionRefusal } from "../mcp/sessionRefusal.ts"
import { httpRequestDuration, httpRequests, httpRequestsInFlight, labelled } from "../observability/metrics.ts"
import { CurrentMatchedRoute, newMatchedRoute } from "../observability/routeLabel.ts"
import type { RateLimitState } from "../ratelimit/RateLimitExceeded.ts"
import type { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { CurrentRateLimitNote, RateLimitNote } from "../ratelimit/RateLimitNote.ts"
import { admission } from "./Admission.ts"
import type { CorsPolicy } from "./Cors.ts"
import { classifyPath, type PathClass } from "./pathKind.ts"
import { rateLimitHeaders } from "./RateLimitResponse.ts"

/** The id of the request being handled; also sent back in `X-Service-Request-Id` and on every log line. */
export const CurrentRequestId = Context.Reference<string>("gateway/http/CurrentRequestId", { defaultValue: () => "" })

export interface ServerMiddlewareOptions {
  readonly auth: ServiceAuth["Service"]
  readonly limiter: RateLimiter["Service"]
  /** Proxies whose `X-Forwarded-For` is believed (none: the TCP peer is the client). */
  readonly trustedProxies: ReadonlyArray<IpNetwork.IpNetwork>
  /** Body limit for a request to a path of this kind, in bytes. */
  readonly maxBodyBytes: (path: PathClass) => number
  /** Preflights and CORS headers (`app/Cors.ts`); outside the key check, which a preflight never passes. */
  readonly cors: CorsPolicy
}

const isJson = (response: HttpServerResponse.HttpServerResponse) =>
  response.body._tag === "Uint8Array" && response.body.contentType.startsWith("application/json")

/**
 * Wraps every request: a request id, the service key check, the body size limit, and one
 * error shape for everything that goes wrong outside the handlers (unknown routes, oversized
 * bodies, defects). Internal error text is logged with the request id, never returned.
 */
export const serverMiddleware = (options: ServerMiddlewareOptions) =>
  HttpMiddleware.make((app) =>
    withRequestId(options, (request, path, requestId) =>
      options.cors(
        path,
        admit(request, path, options, (limit) =>
          Effect.gen(function* () {
            const response = yield* run(app, requestId, limit).pipe(
              Effect.catchCause((cause) => fromCause(cause, request, requestId, limit))
            )
            return normalize(response, request)
          })
        )
      )
    )
  )

/**
 * The same request handling for routes mounted in another application's router: failures are left
 * to that application's error handling (route middleware may not swallow errors), and CORS to that
 * application's router (a preflight matches none of the gateway's routes); the rest is equal.
 */
export const routeMiddleware =
  (options: ServerMiddlewareOptions) =>
  <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    withRequestId(options, (request, path, requestId) =>
      admit(request, path, options, (limit) =>
        Effect.map(run(app, requestId, limit), (response) => normalize(response, request))
      )
    )

const requestsOf = labelled(httpRequests)
const durationOf = labelled(httpRequestDuration)

/**
 * Gives the request an id (header, log annotation, `CurrentRequestId`), counts it in the request
 * metrics (labelled with the route the router matched: see `routeLabel.ts`) and logs its outcome
 * at debug level.
 */
const withRequestId = <E, R>(
  options: ServerMiddlewareOptions,
  handle: (
    request: HttpServerRequest.HttpServerRequest,
    path: PathClass,
    requestId: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) =>
  behindProxies(
    options,
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const requestId = randomUUID()
      const path = pathOf(request.url)
      const started = performance.now()
      const matched = yield* newMatchedRoute
      yield* Metric.modify(httpRequestsInFlight, 1)
      const response = yield* handle(request, classifyPath(request.url), requestId).pipe(
        Effect.provideService(CurrentMatchedRoute, matched),
        Effect.tap((response) => {
          const seconds = (performance.now() - started) / 1000
          const labels = { route: matched.label, method: request.method, status: String(response.status) }
          return Effect.all(
            [
              Metric.update(requestsOf(labels), 1),
              Metric.update(durationOf(labels), seconds),
              Effect.logDebug("handled", { status: response.status, ms: Math.round(seconds * 1000) })
            ],
            { discard: true }
          )
        }),
        Effect.onExit(() => Metric.modify(httpRequestsInFlight, -1)),
        Effect.annotateLogs({ requestId, method: request.method, path })
      )
      return HttpServerResponse.setHeader(response, REQUEST_ID_HEADER, requestId)
    })
  )

/**
 * Behind trusted proxies, the client is the address they name in `X-Forwarded-For` (walked from the
 * right, past the trusted ones); from anyone else the header is ignored, so it cannot dodge a limit.
 */
const behindProxies = <E, R>(
  options: ServerMiddlewareOptions,
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>
) =>
  options.trustedProxies.length === 0
    ? app
    : HttpMiddleware.xForwardedHeaders({ trustedProxies: options.trustedProxies })(app)

/**
 * The key, the rate limits and the declared body size, checked before anything else runs. The
 * response carries the `x-ratelimit-*` headers of the tightest limit the request met, here or in
 * the handler.
 */
const admit = <E, R>(
  request: HttpServerRequest.HttpServerRequest,
  path: PathClass,
  options: ServerMiddlewareOptions,
  next: (limit: number) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) =>
  Effect.gen(function* () {
    const note = new RateLimitNote()
    const admitted = yield* admission(options, request, path).pipe(Effect.provideService(CurrentRateLimitNote, note))
    if (admitted._tag === "Refused") return withRateLimitHeaders(admitted.response, note.current)
    const limit = options.maxBodyBytes(path)
    const declaredLength = Number(request.headers["content-length"] ?? 0)
    if (declaredLength > limit) return withRateLimitHeaders(tooLarge(limit, request), note.current)
    const response = yield* next(limit).pipe(
      Effect.provideService(CurrentRateLimitNote, note),
      Effect.provideService(CurrentNamespace, admitted.namespace),
      Effect.provideService(CurrentKey, admitted.key)
    )
    return withRateLimitHeaders(response, note.current)
  })

/**
 * Our limit's headers, unless the response already reports a tighter one (a 429 from the
 * pipeline's per-user limit, or the provider's own headers relayed with its answer).
 */
const withRateLimitHeaders = (response: HttpServerResponse.HttpServerResponse, state: RateLimitState | undefined) => {
  if (state === undefined) return response
  const reported = response.headers["x-ratelimit-remaining-requests"]
  if (reported !== undefined && reported.trim() !== "" && Number(reported) <= state.remaining) return response
  return HttpServerResponse.setHeaders(response, rateLimitHeaders(state))
}

const run = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>, requestId: string, limit: number) =>
  app.pipe(
    Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(limit)),
    Effect.provideService(CurrentRequestId, requestId)
  )

/**
 * Framework-made errors (an empty 404, a text 415) get the same JSON shape as ours. Streams and raw
 * bodies are a provider's answers, relayed as they came.
 */
const normalize = (response: HttpServerResponse.HttpServerResponse, request: HttpServerRequest.HttpServerRequest) => {
  if (response.status < 400 || isJson(response) || response.body._tag === "Stream" || response.body._tag === "Raw")
    return response
  const text = response.body._tag === "Uint8Array" ? new TextDecoder().decode(response.body.body) : ""
  if (text === "" && classifyPath(request.url).kind === "mcp") {
    const refusal = sessionRefusal(response.status, request.headers["mcp-session-id"])
    if (refusal !== undefined) return refusal
  }
  return errorResponse(
    new FrameworkRefusal({ status: response.status, text, method: request.method, path: pathOf(request.url) }),
    errorFormatOf(request)
  )
}

const tooLarge = (limit: number, request: HttpServerRequest.HttpServerRequest) =>
  errorResponse(new RequestTooLarge({ limit }), errorFormatOf(request))

const fromCause = <E>(
  cause: Cause.Cause<E>,
  request: HttpServerRequest.HttpServerRequest,
  requestId: string,
  limit: number
) => {
  // A client that went away: there is nobody to answer.
  if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
  const error = Cause.squash(cause)
  if (HttpServerError.isHttpServerError(error)) {
    const reason = error.reason
    if (reason._tag === "RouteNotFound") {
      return Effect.succeed(
        errorResponse(new UnknownRoute({ method: request.method, path: pathOf(request.url) }), errorFormatOf(request))
      )
    }
    if (reason._tag === "RequestParseError") {
      return Effect.succeed(
        reason.reason === "BodyTooLarge"
          ? tooLarge(limit, request)
          : errorResponse(new UnreadableRequest(), errorFormatOf(request))
      )
    }
  }
  return Effect.logError("request failed", cause).pipe(
    Effect.as(errorResponse(new InternalError({ requestId }), errorFormatOf(request)))
  )
}
