import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Duration, Effect, Layer } from "effect"
import { HttpMiddleware, HttpRouter, HttpServer, type HttpServerResponse, UrlParams } from "effect/http"
import type * as Types from "effect/Types"
import { ServiceAuth } from "../auth/ServiceAuth.ts"
import { ServerConfig } from "../http/ServerConfig.ts"
import { MatchedRouteMiddleware } from "../observability/routeLabel.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { corsFor } from "./Cors.ts"
import { METRICS_PATH } from "./metricsPath.ts"
import type { PathClass } from "./pathKind.ts"
import { routeMiddleware, serverMiddleware } from "./ServerMiddleware.ts"
import { HEALTH_PATH, READY_PATH } from "./SystemApi.ts"

/**
 * Probes and scrapes: traced, they would be most of the exported spans and tell nothing. No server
 * span here; their handlers trace nothing either (`untraced`).
 */
const UNTRACED_PATHS: ReadonlySet<string> = new Set([HEALTH_PATH, READY_PATH, METRICS_PATH])

const untraced = Layer.succeed(
  HttpMiddleware.TracerDisabledWhen,
  (request) => request.method === "GET" && UNTRACED_PATHS.has(request.url.split("?", 1)[0] ?? "")
)

/**
 * Every query parameter's value is left out of a server span's `url.full` and `url.query` (the names
 * stay): a client may put a key or a user's text there. The path (`url.path`) is kept.
 */
const queryValuesRedacted = Layer.succeed(UrlParams.CurrentRedactedNames, [/(?:)/])

/**
 * The longest value a route's path parameter may have (UTF-16 code units, decoded): a 256-character
 * user id in `/api/profiles/{id}`, a 200-character item id. Longer, the route does not match (the
 * router's default, 100, sent longer ids past the routes that check them).
 */
const MAX_PATH_PARAM_LENGTH = 1024

/**
 * Serves `routes` on the given server. Every route is built before the server listens, so the
 * first request after the port opens is answered (listening first would leave early requests
 * hanging while routes are still being built).
 */
export const serveRoutes = <E, R, ES, RS>(
  routes: Layer.Layer<never, E, R>,
  server: Layer.Layer<HttpServer.HttpServer, ES, RS>
) =>
  Layer.unwrap(
    Effect.gen(function* () {
      // Each route notes that the router took it: the request metrics are labelled with its template.
      const handler = yield* HttpRouter.toHttpEffect(routes.pipe(Layer.provide(MatchedRouteMiddleware.layer))).pipe(
        Effect.provideService(HttpRouter.RouterConfig, { maxParamLength: MAX_PATH_PARAM_LENGTH })
      )
      // Applied to the handler itself, not as `serve` middleware: that one only observes a response
      // that has already been written, and this one must be able to replace it.
      const app = serverMiddleware(yield* middlewareOptions)(handler)
      return HttpServer.serve(app).pipe(
        Layer.tap(() => HttpServer.logAddress),
        Layer.provide([untraced, queryValuesRedacted]),
        Layer.provideMerge(server)
      )
    })
  ).pipe(Layer.provide(NodeHttpServer.layerHttpServices))

const middlewareOptions = Effect.gen(function* () {
  const config = yield* ServerConfig
  return {
    auth: yield* ServiceAuth,
    limiter: yield* RateLimiter,
    trustedProxies: config.trustedProxies,
    cors: corsFor(config.corsOrigins),
    // A passed-through body is streamed, never held: the provider sets its own limit (e.g. for uploads).
    // Conversations' bodies are read when the gateway keeps them.
    maxBodyBytes: (path: PathClass) =>
      path.kind === "memory" || path.kind === "conversations"
        ? config.proxyMaxBodyBytes
        : path.kind === "passthrough"
          ? Number.MAX_SAFE_INTEGER
          : config.apiMaxBodyBytes
  }
})

/**
 * The same handling (request id, keys, rate limits, body limits, error shape) as a route middleware:
 * for the gateway's routes mounted in another application's router, where it covers those routes only.
 */
export const GatewayRouteMiddleware = HttpRouter.middleware(
  Effect.map(
    middlewareOptions,
    (options) => (route: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>) =>
      routeMiddleware(options)(route)
  )
)

/** A Node HTTP server on `HOST:PORT` that drains in-flight requests for up to `SHUTDOWN_DRAIN_MS` (15 s) on shutdown. */
export const NodeServerLive = Layer.unwrap(
  Effect.map(ServerConfig, (config) =>
    NodeHttpServer.layerServer(createServer, {
      port: config.port,
      host: config.host,
      gracefulShutdownTimeout: Duration.millis(config.shutdownDrainMs)
    })
  )
)
