import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { sliceApi } from "../http/sliceApi.ts"
import { PluginHost } from "./PluginHost.ts"
import { PluginsGroup } from "./PluginsApi.ts"

export const PluginsHandlers = HttpApiBuilder.group(
  sliceApi(PluginsGroup),
  "plugins",
  Effect.fn(function* (handlers) {
    const host = yield* PluginHost
    return handlers.handle("list", () => Effect.map(host.stats, (plugins) => ({ plugins })))
  })
)
