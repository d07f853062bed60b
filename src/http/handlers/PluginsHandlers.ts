import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { PluginHost } from "../../plugins/PluginHost.ts"
import { GatewayApi } from "../Api.ts"

export const PluginsHandlers = HttpApiBuilder.group(
  GatewayApi,
  "plugins",
  Effect.fn(function* (handlers) {
    const host = yield* PluginHost
    return handlers.handle("list", () => Effect.map(host.stats, (plugins) => ({ plugins })))
  })
)
