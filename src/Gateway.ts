import { Layer } from "effect"
import type { HttpServer } from "effect/http"
import { ServiceAuth } from "./auth/ServiceAuth.ts"
import { AppConfig } from "./config/AppConfig.ts"
import { LoggingLive } from "./config/Logging.ts"
import { HttpAppRoutes } from "./http/HttpApp.ts"
import { serveRoutes } from "./http/HttpServerLive.ts"
import { DatabaseLive } from "./store/Database.ts"
import { ProfileStore } from "./store/ProfileStore.ts"
import { TraitSchema } from "./traits/TraitSchema.ts"

/** The services behind the routes: a migrated database, the profile store, the trait schema, auth. */
export const ServicesLive = Layer.mergeAll(ProfileStore.layer, ServiceAuth.layer).pipe(
  Layer.provideMerge(TraitSchema.layer),
  Layer.provideMerge(DatabaseLive)
)

/**
 * The whole gateway on the given HTTP server, configured by `config` (the environment by default).
 * Shutdown runs in reverse: the server stops accepting and drains, then the database closes.
 */
export const GatewayLive = (
  server: Layer.Layer<HttpServer.HttpServer, unknown, AppConfig>,
  config: Layer.Layer<AppConfig, unknown> = AppConfig.layer
) =>
  serveRoutes(HttpAppRoutes, server).pipe(
    Layer.provide(ServicesLive),
    Layer.provide(LoggingLive),
    Layer.provideMerge(config)
  )
