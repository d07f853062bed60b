import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { errorFormatOf } from "../apis/errorFormat.ts"
import { errorResponse } from "../http/OpenAiError.ts"
import { clientProvider } from "../providers/providers.ts"
import { Upstream } from "../upstream/Upstream.ts"
import { UpstreamConfig } from "../upstream/UpstreamConfig.ts"
import type { PassthroughReply } from "../upstream/UpstreamReply.ts"
import { selectUpstream } from "./selectUpstream.ts"

export const PASSTHROUGH_PATH = "/v1/*"

/** Request headers that belong to this hop or to the gateway, never to the provider. */
const HOP_AND_GATEWAY_HEADERS = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "expect",
  // The gateway's key (or an Anthropic client's `x-api-key` holding it): the provider gets the target's key.
  "authorization",
  "x-api-key",
  "cookie",
  // Who the client is stays here; the provider gets the gateway's own trace context when tracing is on.
  "forwarded",
  "x-real-ip",
  "traceparent",
  "tracestate",
  "b3"
])
const GATEWAY_HEADER_PREFIXES = ["x-service-", "x-upstream-", "x-forwarded-", "x-b3-", ":"]

/** The client's headers as the provider should see them: everything but the hop's and the gateway's own. */
export const passthroughHeaders = (headers: Readonly<Record<string, string | undefined>>): Record<string, string> => {
  // `Connection: foo` makes `foo` a header of this hop too (RFC 9110 §7.6.1).
  const named = new Set((headers["connection"] ?? "").split(",").map((name) => name.trim().toLowerCase()))
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_AND_GATEWAY_HEADERS.has(name) || named.has(name)) continue
    if (GATEWAY_HEADER_PREFIXES.some((prefix) => name.startsWith(prefix))) continue
    out[name] = value
  }
  return out
}

/** The provider's answer as it came: status, headers and the body streamed through. */
export const passthroughResponse = (reply: PassthroughReply) =>
  HttpServerResponse.raw(reply.body, { status: reply.status, headers: reply.headers })

const hasBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? 0) > 0

/**
 * Every other `/v1` call (embeddings, files, audio, images, moderations, batches, `models/{id}`, …)
 * goes to the default provider (or the configured one named by `X-Upstream-Provider`; a provider's
 * own for its SDK's client, `clientProvider`: Anthropic for one that sends `anthropic-version`) as it
 * came: method, path, query, headers and body, the body streamed through without being buffered; the provider's status, headers and body come back the
 * same way. Nothing is injected or recorded, and
 * no user id is needed. Where the call goes still comes only from configuration.
 */
export const PassthroughRoutes = HttpRouter.use(
  Effect.fn(function* (router) {
    yield* router.add("*", PASSTHROUGH_PATH, yield* makePassThrough)
  })
)

/** Passes the current request through to its provider, as `PassthroughRoutes` does (for routes that answer some calls themselves). */
export const makePassThrough = Effect.gen(function* () {
  const upstream = yield* Upstream
  const config = yield* UpstreamConfig
  return Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    // A provider's own SDK (Anthropic's always name the API version) is talking to that provider.
    return yield* selectUpstream(request.headers, config, clientProvider(request.headers)).pipe(
      Effect.flatMap((target) =>
        upstream.passthrough(target, {
          method: request.method,
          path: request.url.slice("/v1".length),
          headers: passthroughHeaders(request.headers),
          body: hasBody(request) ? NodeHttpServerRequest.toIncomingMessage(request) : null
        })
      ),
      Effect.match({
        onFailure: (failure) => errorResponse(failure, errorFormatOf(request)),
        onSuccess: passthroughResponse
      })
    )
  })
})
