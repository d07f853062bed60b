import { type Config, Context } from "effect"
import { commaList, positiveInt, section } from "../config/values.ts"

/** The plugins named in the environment and the budgets of their hooks. */
export const pluginFromEnv = section({
  /** `PLUGINS`: module paths or package names, in the order their hooks run. */
  specifiers: commaList("PLUGINS"),
  /** Budget of one hook call on the request path. */
  timeoutMs: positiveInt("PLUGIN_TIMEOUT_MS", 50),
  /** Budget of one hook call in the background (after the response, in the extraction worker). */
  backgroundTimeoutMs: positiveInt("PLUGIN_BACKGROUND_TIMEOUT_MS", 5000)
})

export type PluginSettings = Config.Success<typeof pluginFromEnv>

export class PluginConfig extends Context.Service<PluginConfig, PluginSettings>()("gateway/plugins/PluginConfig") {}
