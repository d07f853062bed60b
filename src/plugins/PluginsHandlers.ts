import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { GatewayApi } from "../http/Api.ts"
import { PluginHost } from "./PluginHost.ts"

export const PluginsHandlers = HttpApiBuilder.group(
  GatewayApi,
  "plugins",
  Effect.fn(function* (handlers) {
    const host = yield* PluginHost
    return handlers.handle("list", () => Effect.map(host.stats, (plugins) => ({ plugins })))
  })
)
