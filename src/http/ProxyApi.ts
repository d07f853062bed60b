import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ChatCompletion, ChatCompletionRequest, ModelList } from "../openai/chat.ts"
import { ErrorDetail } from "./OpenAiError.ts"

/**
 * The OpenAI-compatible proxy as the OpenAPI document shows it, from the same schemas the proxy
 * decodes with. The routes themselves are served by `ProxyRoutes` (they relay bytes and streams,
 * which `HttpApi` handlers do not), so this group is documentation only: it has no handlers.
 */

const errorAt = (status: number, description: string) =>
  Schema.Struct({ error: ErrorDetail }).annotate({ httpApiStatus: status, description })

const ProxyErrors = [
  errorAt(400, "A malformed request, an invalid user id or trait declaration, or a parameter the provider cannot take"),
  errorAt(401, "No or a wrong service key, or no key for the provider"),
  errorAt(403, "The key may not use /v1, or a plugin refused the user"),
  errorAt(413, "The body is larger than MAX_REQUEST_BYTES"),
  errorAt(429, "A rate limit of the gateway (or the provider's, relayed)"),
  errorAt(502, "The provider could not be reached"),
  errorAt(503, "With FAIL_OPEN=false: the memory store is unavailable"),
  errorAt(504, "The provider did not answer in time")
]

const providerHeaders = {
  "x-upstream-provider": Schema.optionalKey(Schema.Literals(["openai", "anthropic"])),
  "x-upstream-key": Schema.optionalKey(Schema.String).annotate({ description: "The provider key (else the configured one)" })
}

const CompletionHeaders = Schema.Struct({
  ...providerHeaders,
  "x-service-id": Schema.optionalKey(Schema.String).annotate({
    description: "The user (else the body's `user`, else `metadata.profile_id`)"
  }),
  "x-service-traits": Schema.optionalKey(Schema.String).annotate({
    description: "Per-request trait declarations, a JSON array (the body's `service.traits` wins per key)"
  })
})

export class ProxyGroup extends HttpApiGroup.make("proxy", { topLevel: true }).add(
  HttpApiEndpoint.post("chatCompletions", "/v1/chat/completions", {
    headers: CompletionHeaders,
    payload: ChatCompletionRequest,
    success: ChatCompletion,
    error: ProxyErrors
  }).annotateMerge(OpenApi.annotations({
    description: "OpenAI Chat Completions with the user's memory injected into the system message. " +
      "Fields beyond those shown are forwarded as sent. With `stream: true` the answer is " +
      "`text/event-stream` of `chat.completion.chunk` events, relayed as the provider sends them. " +
      "The response carries `X-Service-Context` (what was injected), `X-Service-Memory` and `X-Service-Overhead-Ms`."
  })),
  HttpApiEndpoint.get("models", "/v1/models", {
    headers: Schema.Struct(providerHeaders),
    success: ModelList,
    error: ProxyErrors
  }).annotateMerge(OpenApi.annotations({ description: "The provider's models, in OpenAI's format" }))
) {}
