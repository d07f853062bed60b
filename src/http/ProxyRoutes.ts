import { Effect, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { AppConfig } from "../config/AppConfig.ts"
import { Completion, type CompletionFailure } from "../pipeline/Completion.ts"
import { selectUpstream } from "../pipeline/selectUpstream.ts"
import { Upstream, type UpstreamReply } from "../upstream/Upstream.ts"
import { errorResponse } from "./OpenAiError.ts"
import { CurrentRequestId } from "./ServerMiddleware.ts"

/** Every way a proxied call can fail, as the OpenAI-shaped response the client gets: each failure knows its own. */
export const failureResponse = (failure: CompletionFailure): HttpServerResponse.HttpServerResponse => errorResponse(failure)

const toResponse = (reply: UpstreamReply) =>
  reply._tag === "Body"
    ? HttpServerResponse.uint8Array(reply.body, { status: reply.status, headers: reply.headers, contentType: reply.contentType })
    : HttpServerResponse.stream(Stream.map(reply.pieces, (piece) => piece.bytes), {
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
