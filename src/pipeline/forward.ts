import { Effect } from "effect"
import type { Profile } from "../domain/Profile.ts"
import type { ChatMessage } from "../openai/chat.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { Upstream, type UpstreamTarget } from "../upstream/Upstream.ts"
import type { ChatRequest } from "./ChatRequest.ts"
import { forwardedHeaders } from "./selectUpstream.ts"

/**
 * Stage 4: the request, with the injected messages and as the `beforeForward` plugins leave it,
 * to the chosen provider. Returns once the provider's response has started.
 */
export const forward = Effect.fn("pipeline.forward")(function*(
  request: ChatRequest,
  messages: ReadonlyArray<ChatMessage>,
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
    body: { ...request.body, messages }
  })
  return yield* (yield* Upstream).chat(route.target, body, {
    headers: forwardedHeaders(route.headers),
    includeUsage: request.includeUsage
  })
})
