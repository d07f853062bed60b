import { anthropic } from "./anthropic/provider.ts"
import { openai } from "./openai/provider.ts"
import type { Provider } from "./Provider.ts"
import { ProviderName } from "./ProviderName.ts"

/** Each provider's rules, by the name configuration and `X-Upstream-Provider` use. */
export const providers: Readonly<Record<ProviderName, Provider>> = { openai, anthropic }

export const providerNames: ReadonlyArray<ProviderName> = ProviderName.literals

export const providerOf = (name: ProviderName): Provider => providers[name]

/** The provider whose own SDK the client is (its calls go there), if any. */
export const clientProvider = (headers: Readonly<Record<string, string | undefined>>): ProviderName | undefined =>
  providerNames.find((name) => providers[name].isOwnClient(headers))
