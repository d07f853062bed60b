import { Effect } from "effect"
import type { Outbound } from "../apis/ApiAdapter.ts"
import type { Profile } from "../domain/Profile.ts"
import { withTail } from "../injection/conversationTail.ts"
import { PlacementConfig } from "../injection/PlacementConfig.ts"
import { promptCacheKeyOf, withCacheBreakpoint, withPromptCacheKey } from "../injection/promptCache.ts"
import { requestStage } from "../observability/requestSpan.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { providerOf } from "../providers/providers.ts"
import type { Sender } from "../routing/UpstreamRouter.ts"
import { Upstream } from "../upstream/Upstream.ts"
import type { UpstreamTarget } from "../upstream/UpstreamReply.ts"
import { forwardedHeaders } from "./selectUpstream.ts"
import type { TailPlan } from "./tail.ts"

/** The turn's context and where it goes. */
export interface PlacedContext {
  /** What the gateway adds for this turn (the block, a thread's note), if anything. */
  readonly text: string | undefined
  /**
   * `INJECTION_PLACEMENT=latest` with a profile: the tail, and the earlier turns' tails that go back;
   * none: the text goes after the operator's instructions.
   */
  readonly plan: TailPlan | undefined
}

/** The index of the last item the model did not write (what a turn's tail follows), or −1. */
const lastGiven = (outbound: Outbound, body: Readonly<Record<string, unknown>>) => {
  const items = outbound.conversation.items(body)
  let index = items.length - 1
  while (index >= 0 && outbound.conversation.isAnswer(items[index])) index--
  return index
}

/**
 * The body with the turn's context where it goes: after the operator's instructions (`system`), or
 * at the conversation's tail with the earlier turns' tails back in their places (`latest`); and the
 * index of the last item of what repeats from the previous turn, for a cache breakpoint (none when
 * the instructions changed: nothing after them repeats).
 */
const placed = (outbound: Outbound, context: PlacedContext) => {
  const { body, conversation } = outbound
  if (context.plan === undefined) {
    if (context.text === undefined) return { body, lastRepeated: lastGiven(outbound, body) }
    return { body: outbound.withContext(body, context.text), lastRepeated: undefined }
  }
  const { items, layout, kept } = context.plan
  const keptBefore = [...kept.entries()].filter(([position, text]) => position < layout.point && text !== "").length
  // Nothing to add: the body goes as it came (a Responses string input stays a string).
  if (keptBefore === 0 && context.text === undefined) return { body, lastRepeated: layout.point - 1 }
  const laidOut = withTail(items, kept, layout.point, context.text, conversation.blockItem)
  return { body: conversation.withItems(body, laidOut), lastRepeated: layout.point + keptBefore - 1 }
}

/**
 * Stage 4: the request, with the turn's context where its placement puts it and as the
 * `beforeForward` plugins leave it, to the chosen provider, as its adapter sends it. For the
 * provider's prompt cache: an Anthropic request without breakpoints gets one at the end of what
 * repeats (`INJECTION_CACHE_CONTROL=auto`), an OpenAI request without a `prompt_cache_key` gets its
 * user's (`INJECTION_PROMPT_CACHE_KEY=user`). Returns once the provider's response has started.
 */
export const makeForward = Effect.gen(function* () {
  const host = yield* PluginHost
  const upstream = yield* Upstream
  const { cacheControl, promptCacheKey } = yield* PlacementConfig
  return Effect.fnUntraced(function* (
    outbound: Outbound,
    context: PlacedContext,
    route: {
      readonly target: UpstreamTarget
      readonly headers: Readonly<Record<string, string | undefined>>
      readonly namespace: string
      readonly userId: string
      readonly profile: Profile | undefined
      /** Sends the attempt, again before the first byte when it fails in a way that may pass (`UpstreamRouter`). */
      readonly send: Sender
    }
  ) {
    const { body, lastRepeated } = placed(outbound, context)
    // The prompt-cache hint the provider takes: a breakpoint in the body, or the user's cache key.
    const cached =
      providerOf(route.target.provider).capabilities.promptCache === "breakpoints"
        ? cacheControl === "auto" && lastRepeated !== undefined
          ? withCacheBreakpoint(body, lastRepeated)
          : body
        : promptCacheKey === "user"
          ? withPromptCacheKey(body, promptCacheKeyOf(route.namespace, route.userId))
          : body
    const forwarded = yield* host.beforeForward({
      profile: route.profile,
      userId: route.userId,
      api: outbound.api,
      body: cached
    })
    return yield* route.send(
      outbound.send(upstream, route.target, forwarded, { headers: forwardedHeaders(route.headers) })
    )
  }, requestStage("pipeline.forward"))
})
