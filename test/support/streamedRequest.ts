import { Effect, Stream } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { UpstreamReply } from "../../src/upstream/UpstreamReply.ts"

/**
 * A request as the HTTP server runs it (`HttpEffect.toHandled`: a scope of its own, closed once its
 * response has been written or it was interrupted) whose handler calls the provider for a stream and
 * answers with it (after `respond`, the rest of the handler); `write` is what the server does with
 * the response. `headers` are the request's (a `traceparent`, say).
 */
export const streamedRequest = (
  call: Effect.Effect<UpstreamReply, unknown>,
  write: (response: HttpServerResponse.HttpServerResponse) => Effect.Effect<unknown>,
  options: { readonly respond?: Effect.Effect<void>; readonly headers?: Record<string, string> } = {}
) =>
  HttpEffect.toHandled(
    Effect.gen(function* () {
      const reply = yield* call
      if (reply._tag !== "EventStream") return yield* Effect.die("expected a stream")
      yield* options.respond ?? Effect.void
      return HttpServerResponse.stream(Stream.map(reply.pieces, (piece) => piece.bytes))
    }).pipe(Effect.orDie, Effect.interruptible), // Interruptible, as the router runs a route.
    (_request, response) => write(response)
  ).pipe(
    Effect.provideService(
      HttpServerRequest.HttpServerRequest,
      HttpServerRequest.fromWeb(
        new Request("http://gateway.test/v1/chat/completions", { method: "POST", headers: options.headers ?? {} })
      )
    )
  )
