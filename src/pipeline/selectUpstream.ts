import { Effect, Option, Redacted, Schema } from "effect"
import { InvalidChatRequest, MissingUpstreamKey } from "../domain/requestErrors.ts"
import { CurrentKey } from "../keys/CurrentKey.ts"
import type { BoundUpstream } from "../keys/VirtualKeys.ts"
import type { ProviderName } from "../providers/ProviderName.ts"
import { providerNames, providerOf } from "../providers/providers.ts"
import type { LoadedRoute } from "../routing/Routes.ts"
import type { Candidate, UpstreamRouter } from "../routing/UpstreamRouter.ts"
import { UpstreamProvider, type UpstreamSettings } from "../upstream/UpstreamConfig.ts"
import type { UpstreamTarget } from "../upstream/UpstreamReply.ts"

const isProvider = Schema.is(UpstreamProvider)

const boundKeyOnly = new InvalidChatRequest({
  code: "upstream_key_not_allowed",
  message: "This API key is bound to a provider key; X-Upstream-Key is not accepted with it",
  param: "X-Upstream-Key"
})

const invalidProvider = new InvalidChatRequest({
  code: "invalid_upstream_provider",
  message: `X-Upstream-Provider must be ${providerNames.map((name) => `'${name}'`).join(" or ")}`,
  param: "X-Upstream-Provider"
})

/**
 * The provider (`X-Upstream-Provider`, a name among the configured ones, never a URL) and its
 * key (`X-Upstream-Key`, else the configured key). `only` is the one provider an API can go to
 * (Anthropic's Messages API goes to Anthropic): a header naming another is refused. A request whose
 * key is bound to a provider key (`CurrentKey`'s `upstream`) goes there with it, and may not name another.
 */
export const selectUpstream = (
  headers: Readonly<Record<string, string | undefined>>,
  config: UpstreamSettings,
  only?: UpstreamProvider
): Effect.Effect<UpstreamTarget, InvalidChatRequest | MissingUpstreamKey> =>
  Effect.flatMap(CurrentKey, (key) =>
    key?.upstream === undefined ? selectNamed(headers, config, only) : selectBound(headers, key.upstream, only)
  )

const selectBound = (
  headers: Readonly<Record<string, string | undefined>>,
  bound: BoundUpstream,
  only: UpstreamProvider | undefined
): Effect.Effect<UpstreamTarget, InvalidChatRequest> => {
  const named = headers["x-upstream-provider"]?.trim().toLowerCase()
  const key = headers["x-upstream-key"]?.trim()
  if (key !== undefined && key !== "") return Effect.fail(boundKeyOnly)
  const wanted = only ?? (named === undefined || named === "" ? bound.provider : named)
  if (wanted !== bound.provider) {
    return Effect.fail(
      new InvalidChatRequest({
        code: "invalid_upstream_provider",
        message: `This API key is bound to ${bound.provider}; the request would go to ${wanted}`,
        param: "X-Upstream-Provider"
      })
    )
  }
  return Effect.succeed({ provider: bound.provider, apiKey: bound.apiKey })
}

const selectNamed = (
  headers: Readonly<Record<string, string | undefined>>,
  config: UpstreamSettings,
  only?: UpstreamProvider
): Effect.Effect<UpstreamTarget, InvalidChatRequest | MissingUpstreamKey> => {
  const named = headers["x-upstream-provider"]?.trim().toLowerCase()
  const provider = named === undefined || named === "" ? (only ?? config.provider) : named
  if (!isProvider(provider)) return Effect.fail(invalidProvider)
  if (only !== undefined && only !== provider) {
    return Effect.fail(
      new InvalidChatRequest({
        code: "invalid_upstream_provider",
        message: `This API goes to ${only} only; X-Upstream-Provider may not name another provider`,
        param: "X-Upstream-Provider"
      })
    )
  }
  const key = headers["x-upstream-key"]?.trim().replace(/^bearer\s+/i, "")
  if (key !== undefined && key !== "") return Effect.succeed({ provider, apiKey: Redacted.make(key) })
  return Option.match(config[provider].apiKey, {
    onNone: () => Effect.fail(new MissingUpstreamKey({ provider })),
    onSome: (apiKey) => Effect.succeed({ provider, apiKey })
  })
}

/**
 * The targets of a routed model this request may go to, in the order it tries them. A request whose
 * key is bound to a provider key goes to that provider's targets only, with that key; otherwise a
 * target's key is its own (`apiKeyEnv`, `keyId`), else the one a direct request to its provider would
 * use: `X-Upstream-Key` (for the provider the request names, or the default one), the configured key.
 * `X-Upstream-Provider` keeps the targets of that provider; `only` is the one provider the API can go
 * to (Messages: Anthropic). The headers are refused as a direct request refuses them.
 */
export const selectRouted = (
  router: UpstreamRouter["Service"],
  route: LoadedRoute,
  headers: Readonly<Record<string, string | undefined>>,
  config: UpstreamSettings,
  only?: UpstreamProvider
): Effect.Effect<ReadonlyArray<Candidate>, InvalidChatRequest> =>
  Effect.flatMap(CurrentKey, (key) => {
    const named = headers["x-upstream-provider"]?.trim().toLowerCase() || undefined
    const sentKey = headers["x-upstream-key"]?.trim().replace(/^bearer\s+/i, "") || undefined
    const bound = key?.upstream
    if (named !== undefined && !isProvider(named)) return Effect.fail(invalidProvider)
    if (bound !== undefined && sentKey !== undefined) return Effect.fail(boundKeyOnly)
    const forProvider = (provider: ProviderName) =>
      sentKey !== undefined && provider === (named ?? config.provider)
        ? Option.some(Redacted.make(sentKey))
        : config[provider].apiKey
    const allowed = (provider: ProviderName) =>
      (only === undefined || provider === only) &&
      (named === undefined || provider === named) &&
      (bound === undefined || provider === bound.provider)
    const candidates = router.routed(route, { bound: bound?.apiKey, forProvider }, allowed)
    if (candidates.length > 0) return Effect.succeed(candidates)
    return Effect.fail(
      new InvalidChatRequest({
        code: "no_route_target",
        message:
          `No target of the route for '${route.model}' can serve this request: ` +
          (route.targets.some((target) => allowed(target.provider))
            ? "the gateway has no key for any of them"
            : `it may go to ${[only, named, bound?.provider].filter((p) => p !== undefined).join(" and ")} only`),
        param: "model"
      })
    )
  })

/** Client headers the provider may see (each provider's own, and these); everything else (auth, cookies, X-Service-*) stays here. */
const FORWARDED = [...providerNames.flatMap((name) => providerOf(name).clientHeaders), "idempotency-key"]

export const forwardedHeaders = (headers: Readonly<Record<string, string | undefined>>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name of FORWARDED) {
    const value = headers[name]
    if (value !== undefined) out[name] = value
  }
  return out
}
