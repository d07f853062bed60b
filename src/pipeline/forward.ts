import { Effect } from "effect"
import type { ApiAdapter } from "../apis/ApiAdapter.ts"
import type { Profile } from "../domain/Profile.ts"
import { requestSpan } from "../observability/requestSpan.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { Upstream, type UpstreamTarget } from "../upstream/Upstream.ts"
import type { ChatRequest } from "./ChatRequest.ts"
import { forwardedHeaders } from "./selectUpstream.ts"

/**
 * Stage 4: the request, with the context block where its API puts it (after the operator's
 * instructions) and as the `beforeForward` plugins leave it, to the chosen provider, as its adapter
 * sends it. Returns once the provider's response has started.
 */
export const forward = Effect.fnUntraced(function* (
  adapter: ApiAdapter,
  request: ChatRequest,
  context: string | undefined,
  route: {
    readonly target: UpstreamTarget
    readonly headers: Readonly<Record<string, string | undefined>>
    readonly userId: string
    readonly profile: Profile | undefined
  }
) {
  const body = yield* (yield* PluginHost).beforeForward({
    profile: route.profile,
    userId: route.userId,
    api: request.api,
    body: context === undefined ? request.body : adapter.withContext(request, context)
  })
  const options = { headers: forwardedHeaders(route.headers), includeUsage: request.includeUsage }
  return yield* adapter.send(yield* Upstream, route.target, body, options)
}, requestSpan("pipeline.forward"))
