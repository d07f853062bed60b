import { Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiScalar, OpenApi } from "effect/http-api"
import { ApiValidationLive } from "../http/ApiValidation.ts"
import { JobsHandlers } from "../jobs/JobsHandlers.ts"
import { KeysHandlers } from "../keys/KeysHandlers.ts"
import { McpRoutes } from "../mcp/McpRoutes.ts"
import { MemoriesHandlers } from "../memories/MemoriesHandlers.ts"
import { SharedMemoriesHandlers } from "../memories/SharedMemoriesHandlers.ts"
import { NamespacesHandlers } from "../namespaces/NamespacesHandlers.ts"
import { PassthroughRoutes } from "../pipeline/PassthroughRoutes.ts"
import { PluginsHandlers } from "../plugins/PluginsHandlers.ts"
import { ProfilesHandlers } from "../profileApi/ProfilesHandlers.ts"
import { ConversationsRoutes } from "../responsesApi/ConversationsRoutes.ts"
import { ResponsesStateGroup } from "../responsesApi/ResponsesApi.ts"
import { ResponsesRoutes } from "../responsesApi/ResponsesRoutes.ts"
import { RoutesHandlers } from "../routing/RoutesHandlers.ts"
import { ThreadsHandlers } from "../threads/ThreadsHandlers.ts"
import { TraitDefinitionsHandlers, TraitsHandlers } from "../traits/TraitsHandlers.ts"
import { UsageHandlers } from "../usage/UsageHandlers.ts"
import { WebhooksHandlers } from "../webhooks/WebhooksHandlers.ts"
import { GatewayApi } from "./Api.ts"
import { BaseUrlGuard } from "./BaseUrlGuard.ts"
import { ConsoleRoutes } from "./ConsoleRoutes.ts"
import { GatewayRouteMiddleware } from "./HttpServerLive.ts"
import { MetricsRoutes } from "./MetricsRoutes.ts"
import { ProxyGroup } from "./ProxyApi.ts"
import { ProxyRoutes } from "./ProxyRoutes.ts"
import { SystemHandlers } from "./SystemHandlers.ts"

/**
 * The management API and the proxy, as documented: the proxy's groups have no handlers (see `ProxyApi.ts`,
 * `responsesApi/ResponsesApi.ts`).
 */
const DocumentedApi = GatewayApi.add(ProxyGroup, ResponsesStateGroup)

const openApiDocument = HttpRouter.add("GET", "/openapi.json", HttpServerResponse.json(OpenApi.fromApi(DocumentedApi)))

/** The management API, the OpenAPI document (`/openapi.json`) and interactive docs (`/docs`). */
export const ApiRoutes = Layer.mergeAll(
  HttpApiBuilder.layer(GatewayApi).pipe(
    Layer.provide([
      SystemHandlers,
      ProfilesHandlers,
      TraitsHandlers,
      TraitDefinitionsHandlers,
      MemoriesHandlers,
      ThreadsHandlers,
      JobsHandlers,
      NamespacesHandlers,
      SharedMemoriesHandlers,
      KeysHandlers,
      WebhooksHandlers,
      UsageHandlers,
      RoutesHandlers,
      PluginsHandlers
    ]),
    Layer.provide(ApiValidationLive)
  ),
  openApiDocument,
  // The script is served with the page; its default fonts would come from a CDN (offline: a slow load).
  HttpApiScalar.layer(DocumentedApi, { path: "/docs", scalar: { withDefaultFonts: false } })
)

/**
 * Every route the gateway serves: the OpenAI-compatible proxy under /v1 (the memory routes, and every
 * other /v1 call passed through), management under /api, metrics, the web console, the MCP server.
 */
export const HttpAppRoutes = Layer.mergeAll(
  ApiRoutes,
  ProxyRoutes,
  ResponsesRoutes,
  ConversationsRoutes,
  BaseUrlGuard,
  PassthroughRoutes,
  MetricsRoutes,
  ConsoleRoutes,
  McpRoutes
)

/**
 * The gateway's routes, each wrapped in the gateway's request handling (service key, body limits,
 * error shape), to mount in another application's router beside its own routes.
 */
export const EmbeddableRoutes = HttpAppRoutes.pipe(Layer.provide(GatewayRouteMiddleware.layer))
