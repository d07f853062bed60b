import { Effect, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { adapters } from "../apis/adapters.ts"
import type { ProxiedApi } from "../apis/ChatRequest.ts"
import { errorFormatOf } from "../apis/errorFormat.ts"
import { errorResponse } from "../http/OpenAiError.ts"
import { Completion, type CompletionFailure } from "../pipeline/Completion.ts"
import { passthroughHeaders, passthroughResponse } from "../pipeline/PassthroughRoutes.ts"
import { selectUpstream } from "../pipeline/selectUpstream.ts"
import { clientProvider } from "../providers/providers.ts"
import { Upstream } from "../upstream/Upstream.ts"
import { UpstreamConfig } from "../upstream/UpstreamConfig.ts"
import type { UpstreamReply } from "../upstream/UpstreamReply.ts"
import { CurrentRequestId } from "./ServerMiddleware.ts"

/** Every way a proxied call can fail, as the response its client reads (each failure knows its own). */
const failureResponse =
  (request: HttpServerRequest.HttpServerRequest) =>
  (failure: CompletionFailure): HttpServerResponse.HttpServerResponse =>
    errorResponse(failure, errorFormatOf(request))

const toResponse = (reply: UpstreamReply) =>
  reply._tag === "Body"
    ? HttpServerResponse.uint8Array(reply.body, {
        status: reply.status,
        headers: reply.headers,
        contentType: reply.contentType
      })
    : HttpServerResponse.stream(
        Stream.map(reply.pieces, (piece) => piece.bytes),
        {
          status: reply.status,
          headers: { ...reply.headers, "cache-control": "no-cache" },
          contentType: reply.headers["content-type"] ?? "text/event-stream"
        }
      )

const MODELS_PATH = "/v1/models"

/**
 * The memory routes, one per API adapter — `POST /v1/chat/completions` and `POST /v1/responses`
 * (OpenAI-compatible), `POST /v1/messages` (Anthropic's Messages API) — and `GET /v1/models`.
 */
export const ProxyRoutes = HttpRouter.use(
  Effect.fn(function* (router) {
    const completion = yield* Completion
    const upstream = yield* Upstream
    const config = yield* UpstreamConfig

    const throughPipeline = (api: ProxiedApi) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const text = yield* request.text
        const requestId = yield* CurrentRequestId
        return yield* completion
          .complete({ api, text, headers: request.headers, requestId })
          .pipe(Effect.match({ onFailure: failureResponse(request), onSuccess: toResponse }))
      })

    for (const adapter of Object.values(adapters)) {
      yield* router.add("POST", adapter.path, throughPipeline(adapter.api))
    }

    yield* router.add(
      "GET",
      MODELS_PATH,
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        // A provider's own SDK (Anthropic's always name the API version) gets that provider's own list, as sent.
        const own = clientProvider(request.headers)
        if (own !== undefined) {
          return yield* selectUpstream(request.headers, config, own).pipe(
            Effect.flatMap((target) =>
              upstream.passthrough(target, {
                method: "GET",
                path: request.url.slice("/v1".length),
                headers: passthroughHeaders(request.headers),
                body: null
              })
            ),
            Effect.match({ onFailure: failureResponse(request), onSuccess: passthroughResponse })
          )
        }
        return yield* selectUpstream(request.headers, config).pipe(
          Effect.flatMap(upstream.models),
          Effect.match({ onFailure: failureResponse(request), onSuccess: toResponse })
        )
      })
    )
  })
)
