import { Schema } from "effect"

/** The providers a request can go to (`UPSTREAM_PROVIDER`, `X-Upstream-Provider`); each one's rules: `providers.ts`. */
export const ProviderName = Schema.Literals(["openai", "anthropic"])
export type ProviderName = typeof ProviderName.Type
