import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ChatCompletionRequest, MessagesRequest, ResponsesRequest } from "../apis/ServiceOptions.ts"
import { AnthropicErrors, ProxyErrors, providerHeaders } from "../http/proxyDocs.ts"
import { AnthropicMessage } from "../providers/anthropic/messages.ts"
import { ChatCompletion, ModelList } from "../providers/openai/chat.ts"
import { ResponseObject } from "../providers/openai/responses.ts"

/**
 * The proxy's memory routes as the OpenAPI document shows them, from the same schemas the proxy
 * decodes with. The routes themselves are served by `ProxyRoutes` (they relay bytes and streams,
 * which `HttpApi` handlers do not), so this group is documentation only: it has no handlers.
 */

const traitsHeader = {
  "x-service-traits": Schema.optionalKey(Schema.String).annotate({
    description: "Per-request trait declarations, a JSON array (the body's `service.traits` wins per key)"
  })
}

const CompletionHeaders = Schema.Struct({
  ...providerHeaders,
  "x-service-id": Schema.optionalKey(Schema.String).annotate({
    description: "The user (else the body's `safety_identifier`, `user`, `metadata.profile_id`, in that order)"
  }),
  ...traitsHeader
})

const MessagesHeaders = Schema.Struct({
  "x-upstream-provider": Schema.optionalKey(Schema.Literal("anthropic")),
  "x-upstream-key": Schema.optionalKey(Schema.String).annotate({
    description: "Anthropic's key (else ANTHROPIC_API_KEY)"
  }),
  "x-service-id": Schema.optionalKey(Schema.String).annotate({
    description: "The user (else the body's `metadata.user_id`)"
  }),
  ...traitsHeader
})

export class ProxyGroup extends HttpApiGroup.make("proxy", { topLevel: true })
  .add(
    HttpApiEndpoint.post("chatCompletions", "/v1/chat/completions", {
      headers: CompletionHeaders,
      payload: ChatCompletionRequest,
      success: ChatCompletion,
      error: ProxyErrors
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Chat completion with memory",
        description:
          "OpenAI Chat Completions with the user's memory injected into the system message. " +
          "Fields beyond those shown are forwarded as sent. With `stream: true` the answer is " +
          "`text/event-stream` of `chat.completion.chunk` events, relayed as the provider sends them. " +
          "The response carries `X-Service-Context` (what was injected), `X-Service-Memory` and `X-Service-Overhead-Ms`."
      })
    ),
    HttpApiEndpoint.post("responses", "/v1/responses", {
      headers: CompletionHeaders,
      payload: ResponsesRequest,
      success: ResponseObject,
      error: ProxyErrors
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Response with memory",
        description:
          "OpenAI Responses with the user's memory added after the caller's `instructions`. Fields beyond " +
          "those shown (tools, …) are forwarded as sent. With `stream: true` the answer is the provider's event stream, " +
          "relayed byte for byte. With `X-Upstream-Provider: anthropic` the request is translated to Anthropic's " +
          "Messages API and the answer (or its stream) back into the Responses format; what cannot be translated " +
          "(built-in tools, structured output, …) is refused with 400 `unsupported_parameter`. Conversation state " +
          "(`previous_response_id`, `store`): kept by the provider (`UPSTREAM_RESPONSES_STATE=passthrough`, the default " +
          "for OpenAI: forwarded as sent) or by the gateway (`gateway`, always for Anthropic): each response is stored " +
          "with its input unless `store: false`, and `previous_response_id` sends the whole conversation; another " +
          "user's or an unknown id: 400 `previous_response_not_found`."
      })
    ),
    HttpApiEndpoint.post("messages", "/v1/messages", {
      headers: MessagesHeaders,
      payload: MessagesRequest,
      success: AnthropicMessage,
      error: AnthropicErrors
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Anthropic message with memory",
        description:
          "Anthropic's Messages API with the user's memory added to `system` (after the caller's blocks, " +
          "`cache_control` kept), sent to Anthropic natively. Fields beyond those shown are forwarded as sent. With " +
          "`stream: true` the answer is Anthropic's event stream, relayed byte for byte."
      })
    ),
    HttpApiEndpoint.get("models", "/v1/models", {
      headers: Schema.Struct(providerHeaders),
      success: ModelList,
      error: ProxyErrors
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List the provider's models",
        description: "The provider's models, in OpenAI's format"
      })
    )
  )
  .annotateMerge(
    OpenApi.annotations({
      description:
        "The memory routes: what the gateway reads, injects into and records. Every other /v1 call is passed through unread."
    })
  ) {}
