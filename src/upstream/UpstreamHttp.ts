import type { Readable } from "node:stream"
import { NodeStream } from "@effect/platform-node"
import { Context, Effect, Layer, Predicate, Scope, type Stream } from "effect"
import { Agent, type Dispatcher } from "undici"
import { UpstreamStreamError, UpstreamTimeout, UpstreamUnreachable } from "../providers/errors.ts"
import { MAX_ERROR_BODY_BYTES } from "./errorBody.ts"
import { UpstreamConfig } from "./UpstreamConfig.ts"

export interface UpstreamRequest {
  readonly method: string
  /** `https://api.openai.com` */
  readonly origin: string
  /** `/v1/chat/completions` */
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  /** Text, or a stream sent as it is read (a passed-through upload). */
  readonly body?: string | Readable | null
  /** Until the response head; default `UPSTREAM_FIRST_BYTE_TIMEOUT_MS`. */
  readonly firstByteTimeoutMs?: number | undefined
}

export interface UpstreamResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Dispatcher.ResponseData["body"]
}

/** The code of an error or of one of its causes (undici and Node put it at different depths). */
const codeOf = (error: unknown): string | undefined => {
  for (let current = error, depth = 0; Predicate.isObject(current) && depth < 5; depth++) {
    if (Predicate.isString(current["code"])) return current["code"]
    current = current["cause"]
  }
  return undefined
}

const flattenHeaders = (headers: Dispatcher.ResponseData["headers"]): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value
  }
  return out
}

/**
 * HTTP to the providers (chat, the extraction model, embeddings, passed-through calls) on undici
 * directly: one keep-alive connection pool per origin, shared by all requests, with the timeouts
 * enforced by undici's own timers (connect, first byte, idle gap between body chunks) rather than a
 * timer per request. Interrupting a call aborts the request.
 */
export class UpstreamHttp extends Context.Service<
  UpstreamHttp,
  {
    /** Sends the request and waits for the response headers. */
    readonly send: (request: UpstreamRequest) => Effect.Effect<UpstreamResponse, UpstreamTimeout | UpstreamUnreachable>
    /** The whole body (non-streaming answers). */
    readonly readBody: (response: UpstreamResponse) => Effect.Effect<Uint8Array, UpstreamTimeout | UpstreamUnreachable>
    /**
     * At most `maxBytes` of the body (error bodies): past that the rest is not read, the body is
     * destroyed and `truncated` is set.
     */
    readonly readBodyUpTo: (
      response: UpstreamResponse,
      maxBytes: number
    ) => Effect.Effect<
      { readonly bytes: Uint8Array; readonly truncated: boolean },
      UpstreamTimeout | UpstreamUnreachable
    >
    /**
     * The body as it arrives; a broken connection, an idle gap or `cut` fails the stream, and its
     * end, however it comes, lets the body go. Until the stream is run the body is held by `scope`
     * (the request's): if that closes first, the answer was never read (the client went away before
     * its body, the request was interrupted after the call) and the body is destroyed unread, which
     * closes its connection: the provider stops writing, and generating. Without an open scope, the
     * body waits for its stream.
     */
    readonly stream: (
      response: UpstreamResponse,
      scope: Scope.Scope | undefined
    ) => Effect.Effect<Stream.Stream<Uint8Array, UpstreamStreamError>>
    /** Ends the body early (its connection closed): its stream fails with `error`. */
    readonly cut: (response: UpstreamResponse, error: UpstreamStreamError) => void
    /**
     * A JSON `POST` to an OpenAI-compatible API (the extraction and embedding models) and its whole
     * answer: the status and the body text (of an error, its first `MAX_ERROR_BODY_BYTES`).
     */
    readonly postJson: (
      url: string,
      headers: Readonly<Record<string, string>>,
      body: unknown
    ) => Effect.Effect<{ readonly status: number; readonly text: string }, UpstreamTimeout | UpstreamUnreachable>
  }
>()("gateway/upstream/UpstreamHttp") {
  static readonly layer = Layer.effect(
    UpstreamHttp,
    Effect.gen(function* () {
      const config = yield* UpstreamConfig
      const agent = yield* Effect.acquireRelease(
        Effect.sync(
          () =>
            new Agent({
              connect: { timeout: config.connectTimeoutMs },
              keepAliveTimeout: 30_000,
              headersTimeout: config.firstByteTimeoutMs,
              bodyTimeout: config.idleTimeoutMs
            })
        ),
        (agent) => Effect.promise(() => agent.destroy())
      )

      /** A failure to talk to the provider at all: unreachable (502) or too slow (504). */
      const transportFailure = (
        error: unknown,
        firstByteTimeoutMs = config.firstByteTimeoutMs
      ): UpstreamTimeout | UpstreamUnreachable => {
        const code = codeOf(error)
        if (code === "UND_ERR_HEADERS_TIMEOUT") {
          return new UpstreamTimeout({
            message: `The upstream provider did not answer within ${firstByteTimeoutMs} ms`
          })
        }
        if (code === "UND_ERR_BODY_TIMEOUT") {
          return new UpstreamTimeout({ message: `The upstream provider sent nothing for ${config.idleTimeoutMs} ms` })
        }
        if (code === "UND_ERR_CONNECT_TIMEOUT" || code === "ETIMEDOUT") {
          return new UpstreamTimeout({ message: "Timed out connecting to the upstream provider" })
        }
        return new UpstreamUnreachable({
          message: `Could not reach the upstream provider${code === undefined ? "" : ` (${code})`}`
        })
      }

      const send = (request: UpstreamRequest) =>
        Effect.tryPromise({
          try: (signal) =>
            agent.request({
              origin: request.origin,
              path: request.path,
              method: request.method,
              headers: request.headers,
              body: request.body ?? null,
              signal,
              ...(request.firstByteTimeoutMs === undefined ? {} : { headersTimeout: request.firstByteTimeoutMs })
            }),
          catch: (error) => transportFailure(error, request.firstByteTimeoutMs)
        }).pipe(
          Effect.map(
            (response): UpstreamResponse => ({
              status: response.statusCode,
              headers: flattenHeaders(response.headers),
              body: response.body
            })
          )
        )

      const readBody = (response: UpstreamResponse) =>
        Effect.tryPromise({
          try: () => response.body.bytes(),
          catch: (error) => transportFailure(error)
        }).pipe(Effect.onInterrupt(() => Effect.sync(() => response.body.destroy())))

      const readBodyUpTo = (response: UpstreamResponse, maxBytes: number) =>
        Effect.tryPromise({
          try: async () => {
            const chunks: Array<Buffer> = []
            let size = 0
            for await (const chunk of response.body as AsyncIterable<Buffer>) {
              chunks.push(chunk)
              size += chunk.byteLength
              // Leaving the loop destroys the body: the rest is never read (undici drops the connection).
              if (size > maxBytes) return { bytes: Buffer.concat(chunks).subarray(0, maxBytes), truncated: true }
            }
            return { bytes: Buffer.concat(chunks), truncated: false }
          },
          catch: (error) => transportFailure(error)
        }).pipe(Effect.onInterrupt(() => Effect.sync(() => response.body.destroy())))

      const stream = (response: UpstreamResponse, scope: Scope.Scope | undefined) => {
        let run = false
        const body = NodeStream.fromReadable<Uint8Array, UpstreamStreamError>({
          evaluate: () => {
            run = true
            return response.body
          },
          onError: (error) =>
            // The gateway's own reason, when it cut the stream (`cut` below).
            error instanceof UpstreamStreamError
              ? error
              : codeOf(error) === "UND_ERR_BODY_TIMEOUT"
                ? new UpstreamStreamError({
                    code: "upstream_timeout",
                    message: `The upstream provider sent nothing for ${config.idleTimeoutMs} ms`
                  })
                : new UpstreamStreamError({
                    code: "upstream_stream_error",
                    message: "The connection to the upstream provider broke"
                  })
        })
        return scope === undefined || scope.state._tag === "Closed"
          ? Effect.succeed(body)
          : Effect.as(
              Scope.addFinalizer(
                scope,
                Effect.sync(() => {
                  if (!run) release(response.body)
                })
              ),
              body
            )
      }

      const postJson = Effect.fnUntraced(function* (
        url: string,
        headers: Readonly<Record<string, string>>,
        body: unknown
      ) {
        const { origin, pathname, search } = new URL(url)
        const response = yield* send({
          method: "POST",
          origin,
          path: `${pathname}${search}`,
          headers: { ...headers, "content-type": "application/json", "accept-encoding": "identity" },
          body: JSON.stringify(body)
        })
        const bytes =
          response.status >= 200 && response.status < 300
            ? yield* readBody(response)
            : (yield* readBodyUpTo(response, MAX_ERROR_BODY_BYTES)).bytes
        return { status: response.status, text: new TextDecoder().decode(bytes) }
      })

      const cut = (response: UpstreamResponse, error: UpstreamStreamError) => {
        if (response.body.destroyed) return
        // Never an uncaught 'error', whether or not the body is being read yet (its reader sees `error` either way).
        response.body.on("error", () => {})
        response.body.destroy(error)
      }

      /** A body no one reads, let go: destroyed, undici aborts its request and closes the connection. */
      const release = (body: UpstreamResponse["body"]) => {
        if (body.destroyed) return
        // Destroyed before it was read, it still emits 'error' (undici's `RequestAbortedError`): never uncaught.
        body.on("error", () => {})
        body.destroy()
      }

      return UpstreamHttp.of({ send, readBody, readBodyUpTo, stream, cut, postJson })
    })
  )
}
