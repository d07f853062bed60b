import { HttpApi } from "effect/http-api"
import { routeLabeler } from "../observability/routeLabel.ts"
import { GatewayApi } from "./Api.ts"
import { METRICS_PATH } from "./MetricsRoutes.ts"
import { CHAT_COMPLETIONS_PATH, MODELS_PATH } from "./ProxyRoutes.ts"

const apiPaths: Array<string> = []
HttpApi.reflect(GatewayApi, { onGroup: () => {}, onEndpoint: ({ endpoint }) => apiPaths.push(endpoint.path) })

/** The route template of a request path, for metric labels: every route the gateway serves. */
export const gatewayRouteLabel = routeLabeler([
  ...apiPaths,
  CHAT_COMPLETIONS_PATH,
  MODELS_PATH,
  METRICS_PATH,
  "/openapi.json",
  "/docs"
])
