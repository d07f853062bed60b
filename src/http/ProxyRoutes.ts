import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { AppConfig } from "../config/AppConfig.ts"
import { Completion, type CompletionFailure } from "../pipeline/Completion.ts"
import { selectUpstream } from "../pipeline/selectUpstream.ts"
import { Upstream, type UpstreamReply } from "../upstream/Upstream.ts"
import { errorResponse, errorTypeFor } from "./OpenAiError.ts"
import { rateLimitResponse } from "./RateLimitResponse.ts"
import { CurrentRequestId } from "./ServerMiddleware.ts"

/** Every way a proxied call can fail, as the OpenAI-shaped response the client gets. */
export const failureResponse = (failure: CompletionFailure): HttpServerResponse.HttpServerResponse => {
  switch (failure._tag) {
    case "InvalidChatRequest":
      return errorResponse(400, failure.code, failure.message, failure.param === null ? {} : { param: failure.param })
    case "MissingUserId":
      return errorResponse(
        400,
        "missing_user_id",
        "Identify the user with the X-Service-Id header, the `user` field or `metadata.profile_id`"
      )
    case "MissingUpstreamKey":
      return errorResponse(
        401,
        "missing_upstream_key",
        `No key for the ${failure.provider} upstream: send X-Upstream-Key or configure UPSTREAM_API_KEY`
      )
    case "UnsupportedParameter":
      return errorResponse(400, "unsupported_parameter", failure.message, { param: failure.param })
    case "PluginRejection":
      return errorResponse(failure.status >= 400 && failure.status <= 599 ? failure.status : 400, failure.code, failure.message)
    case "PluginFailed":
      return errorResponse(500, "plugin_failed", `Plugin '${failure.plugin}' failed in ${failure.hook}: ${failure.reason}`)
    case "RateLimitExceeded":
      return rateLimitResponse(failure)
    case "DatabaseUnavailable":
      // Only with FAIL_OPEN=false; by default such a request goes on without memory.
      return errorResponse(503, "memory_unavailable", "The memory store is unavailable; retry shortly", {
        headers: { "retry-after": "1" }
      })
    case "UpstreamUnreachable":
      return errorResponse(502, "upstream_unreachable", failure.message)
    case "UpstreamTimeout":
      return errorResponse(504, "upstream_timeout", failure.message)
    case "UpstreamError": {
      // The provider's status is kept (429 stays 429 with its retry-after); its code is named in the message.
      const status = failure.status >= 400 && failure.status <= 599 ? failure.status : 502
      const suffix = failure.upstreamCode === null ? "" : ` (upstream code: ${failure.upstreamCode})`
      return HttpServerResponse.jsonUnsafe({
        error: {
          message: `${failure.message}${suffix}`,
          type: failure.upstreamType ?? errorTypeFor(status),
          code: "upstream_error",
          param: failure.param
        }
      }, { status, headers: failure.headers })
    }
  }
}

const toResponse = (reply: UpstreamReply) =>
  reply._tag === "Body"
    ? HttpServerResponse.uint8Array(reply.body, { status: reply.status, headers: reply.headers, contentType: reply.contentType })
    : HttpServerResponse.stream(reply.events, {
      status: reply.status,
      headers: { ...reply.headers, "cache-control": "no-cache" },
      contentType: reply.headers["content-type"] ?? "text/event-stream"
    })

export const CHAT_COMPLETIONS_PATH = "/v1/chat/completions"
export const MODELS_PATH = "/v1/models"

/** `POST /v1/chat/completions` and `GET /v1/models`, OpenAI-compatible. */
export const ProxyRoutes = HttpRouter.use(Effect.fn(function*(router) {
  const completion = yield* Completion
  const upstream = yield* Upstream
  const config = yield* AppConfig

  yield* router.add(
    "POST",
    CHAT_COMPLETIONS_PATH,
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const text = yield* request.text
      const requestId = yield* CurrentRequestId
      return yield* completion.complete({ text, headers: request.headers, requestId }).pipe(
        Effect.match({ onFailure: failureResponse, onSuccess: toResponse })
      )
    })
  )

  yield* router.add(
    "GET",
    MODELS_PATH,
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      return yield* selectUpstream(request.headers, config.upstream).pipe(
        Effect.flatMap(upstream.models),
        Effect.match({ onFailure: failureResponse, onSuccess: toResponse })
      )
    })
  )
}))
