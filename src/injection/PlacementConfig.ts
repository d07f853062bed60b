import { Config, Context, Schema } from "effect"
import { positiveInt, section } from "../config/values.ts"
import { InjectionPlacement } from "../domain/InjectionPlacement.ts"

/** How the context is placed in a request, and what the gateway does for the provider's prompt cache. */
export const placementFromEnv = section({
  /** `INJECTION_PLACEMENT` (a request may choose with `service.injectionPlacement`). */
  placement: Config.schema(InjectionPlacement, "INJECTION_PLACEMENT").pipe(Config.withDefault("latest" as const)),
  /** `auto`: an Anthropic request without a `cache_control` breakpoint gets one at the end of its repeating prefix. */
  cacheControl: Config.schema(Schema.Literals(["off", "auto"]), "INJECTION_CACHE_CONTROL").pipe(
    Config.withDefault("off" as const)
  ),
  /** `user`: an OpenAI request without a `prompt_cache_key` gets one per user (a hash), keeping a user's requests on one cache. */
  promptCacheKey: Config.schema(Schema.Literals(["off", "user"]), "INJECTION_PROMPT_CACHE_KEY").pipe(
    Config.withDefault("off" as const)
  ),
  /** How long an earlier turn's context is kept to be put back where it was (`CONTEXT_BLOCK_TTL_HOURS`). */
  keptHours: positiveInt("CONTEXT_BLOCK_TTL_HOURS", 24)
})

export type PlacementSettings = Config.Success<typeof placementFromEnv>

export class PlacementConfig extends Context.Service<PlacementConfig, PlacementSettings>()(
  "gateway/injection/PlacementConfig"
) {}
