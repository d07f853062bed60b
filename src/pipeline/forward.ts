import { Effect } from "effect"
import type { Outbound } from "../apis/ApiAdapter.ts"
import type { Profile } from "../domain/Profile.ts"
import { requestStage } from "../observability/requestSpan.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { Upstream, type UpstreamTarget } from "../upstream/Upstream.ts"
import { forwardedHeaders } from "./selectUpstream.ts"

/**
 * Stage 4: the request, with the context block where its API puts it (after the operator's
 * instructions) and as the `beforeForward` plugins leave it, to the chosen provider, as its adapter
 * sends it. Returns once the provider's response has started.
 */
export const makeForward = Effect.gen(function* () {
  const host = yield* PluginHost
  const upstream = yield* Upstream
  return Effect.fnUntraced(function* (
    outbound: Outbound,
    context: string | undefined,
    route: {
      readonly target: UpstreamTarget
      readonly headers: Readonly<Record<string, string | undefined>>
      readonly userId: string
      readonly profile: Profile | undefined
    }
  ) {
    const body = yield* host.beforeForward({
      profile: route.profile,
      userId: route.userId,
      api: outbound.api,
      body: context === undefined ? outbound.body : outbound.withContext(outbound.body, context)
    })
    return yield* outbound.send(upstream, route.target, body, { headers: forwardedHeaders(route.headers) })
  }, requestStage("pipeline.forward"))
})
