import { Layer } from "effect"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { GatewayApi } from "./Api.ts"
import { GatewayRouteMiddleware } from "./HttpServerLive.ts"
import { ApiValidationLive } from "./ApiValidation.ts"
import { MetricsRoutes } from "./MetricsRoutes.ts"
import { ProxyRoutes } from "./ProxyRoutes.ts"
import { JobsHandlers } from "./handlers/JobsHandlers.ts"
import { PluginsHandlers } from "./handlers/PluginsHandlers.ts"
import { MemoriesHandlers } from "./handlers/MemoriesHandlers.ts"
import { ProfilesHandlers } from "./handlers/ProfilesHandlers.ts"
import { SystemHandlers } from "./handlers/SystemHandlers.ts"
import { TraitsHandlers } from "./handlers/TraitsHandlers.ts"

/** The management API, its OpenAPI document (`/openapi.json`) and interactive docs (`/docs`). */
export const ApiRoutes = Layer.mergeAll(
  HttpApiBuilder.layer(GatewayApi, { openapiPath: "/openapi.json" }).pipe(
    Layer.provide([SystemHandlers, ProfilesHandlers, TraitsHandlers, MemoriesHandlers, JobsHandlers, PluginsHandlers]),
    Layer.provide(ApiValidationLive)
  ),
  HttpApiScalar.layer(GatewayApi, { path: "/docs" })
)

/** Every route the gateway serves: the OpenAI-compatible proxy under /v1, management under /api, metrics. */
export const HttpAppRoutes = Layer.mergeAll(ApiRoutes, ProxyRoutes, MetricsRoutes)

/**
 * The gateway's routes, each wrapped in the gateway's request handling (service key, body limits,
 * error shape), to mount in another application's router beside its own routes.
 */
export const EmbeddableRoutes = HttpAppRoutes.pipe(Layer.provide(GatewayRouteMiddleware.layer))
