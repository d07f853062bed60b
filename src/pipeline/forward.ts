import { Effect } from "effect"
import { withSystemContext } from "../anthropic/messagesRequest.ts"
import { injectContext } from "../context/injectContext.ts"
import type { Profile } from "../domain/Profile.ts"
import { requestSpan } from "../observability/requestSpan.ts"
import { withInstructionsContext } from "../openai/responses.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { Upstream, type UpstreamTarget } from "../upstream/Upstream.ts"
import type { ChatRequest } from "./ChatRequest.ts"
import { forwardedHeaders } from "./selectUpstream.ts"

/**
 * The body to forward: the caller's, with the context block after the operator's instructions (a
 * chat request's first system message, a Messages request's `system`, a Responses request's `instructions`).
 */
export const withContext = (request: ChatRequest, context: string | undefined): Readonly<Record<string, unknown>> =>
  context === undefined
    ? request.body
    : request.api === "messages"
      ? withSystemContext(request.body, context)
      : request.api === "responses"
        ? withInstructionsContext(request.body, context)
        : { ...request.body, messages: injectContext(request.messages, context) }

/**
 * Stage 4: the request, with the context block and as the `beforeForward` plugins leave it, to the
 * chosen provider: chat completions as they are (or translated for Anthropic), Messages and
 * Responses natively.
 * Returns once the provider's response has started.
 */
export const forward = Effect.fnUntraced(function* (
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
    body: withContext(request, context)
  })
  const upstream = yield* Upstream
  const options = { headers: forwardedHeaders(route.headers), includeUsage: request.includeUsage }
  return yield* request.api === "messages"
    ? upstream.messages(route.target, body, options)
    : request.api === "responses"
      ? upstream.responses(route.target, body, options)
      : upstream.chat(route.target, body, options)
}, requestSpan("pipeline.forward"))
