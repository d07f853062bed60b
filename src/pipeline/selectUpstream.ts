import { Effect, Option, Redacted, Schema } from "effect"
import { InvalidChatRequest, MissingUpstreamKey } from "../domain/requestErrors.ts"
import { CurrentKey } from "../keys/CurrentKey.ts"
import type { BoundUpstream } from "../keys/VirtualKeys.ts"
import { providerNames, providerOf } from "../providers/providers.ts"
import { UpstreamProvider, type UpstreamSettings } from "../upstream/UpstreamConfig.ts"
import type { UpstreamTarget } from "../upstream/UpstreamReply.ts"

const isProvider = Schema.is(UpstreamProvider)

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
  if (key !== undefined && key !== "") {
    return Effect.fail(
      new InvalidChatRequest({
        code: "upstream_key_not_allowed",
        message: "This API key is bound to a provider key; X-Upstream-Key is not accepted with it",
        param: "X-Upstream-Key"
      })
    )
  }
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
  if (!isProvider(provider)) {
    return Effect.fail(
      new InvalidChatRequest({
        code: "invalid_upstream_provider",
        message: `X-Upstream-Provider must be ${providerNames.map((name) => `'${name}'`).join(" or ")}`,
        param: "X-Upstream-Provider"
      })
    )
  }
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
