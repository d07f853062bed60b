import { Schema } from "effect"
import { providerNames } from "../providers/providers.ts"
import { ErrorDetail } from "./OpenAiError.ts"

/**
 * What the documentation of the proxied routes shares (`app/ProxyApi.ts`, `responsesApi/ResponsesApi.ts`):
 * their error answers and the headers that choose the provider.
 */

const errorStatuses: ReadonlyArray<readonly [status: number, description: string]> = [
  [400, "A malformed request, an invalid user id or trait declaration, or a parameter the provider cannot take"],
  [401, "No or a wrong service key, or no key for the provider"],
  [403, "The key may not use /v1, or a plugin refused the user"],
  [413, "The body is larger than MAX_REQUEST_BYTES"],
  [429, "A rate limit of the gateway (or the provider's, relayed)"],
  [502, "The provider could not be reached"],
  [503, "With FAIL_OPEN=false: the memory store is unavailable"],
  [504, "The provider did not answer in time"]
]

export const ProxyErrors = errorStatuses.map(([status, description]) =>
  Schema.Struct({ error: ErrorDetail }).annotate({ httpApiStatus: status, description })
)

/** The same errors in Anthropic's format, as `/v1/messages` answers them (`errorFormatOf`). */
export const AnthropicErrors = errorStatuses.map(([status, description]) =>
  Schema.Struct({ type: Schema.Literal("error"), error: ErrorDetail }).annotate({ httpApiStatus: status, description })
)

export const providerHeaders = {
  "x-upstream-provider": Schema.optionalKey(Schema.Literals(providerNames)),
  "x-upstream-key": Schema.optionalKey(Schema.String).annotate({
    description: "The provider key (else the configured one)"
  })
}
