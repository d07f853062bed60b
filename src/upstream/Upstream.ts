import { Context, Effect, Exit, Layer, Option, Redacted, Result, Scope, Stream, Tracer } from "effect"
import { requestSpan, stageTimed } from "../observability/requestSpan.ts"
import { currentTraceparent } from "../observability/traceContext.ts"
import {
  redactSecrets,
  UpstreamError,
  type UpstreamFailure,
  type UpstreamStreamError,
  type UpstreamTimeout,
  type UpstreamUnreachable
} from "../providers/errors.ts"
import type { ChatTranslation } from "../providers/Provider.ts"
import { providerNames, providerOf } from "../providers/providers.ts"
import { parseAnswer, readAnswerBody } from "../providers/usage.ts"
import { errorDetail, MAX_ERROR_BODY_BYTES } from "./errorBody.ts"
import { redactedErrorAnswer } from "./passthroughError.ts"
import {
  endProviderSpan,
  noteAnswer,
  notePiece,
  type ProviderSpan,
  providerSpanName,
  requestAttributes,
  serverAttributes,
  traceProviderCall
} from "./providerSpan.ts"
import { ERROR_HEADERS, PASSTHROUGH_HOP_HEADERS, relayHeaders, splitBaseUrl } from "./relayHeaders.ts"
import { UpstreamConfig, type UpstreamProvider } from "./UpstreamConfig.ts"
import { UpstreamHttp, type UpstreamResponse } from "./UpstreamHttp.ts"

import type {
  ChatOptions,
  PassthroughReply,
  PassthroughRequest,
  StreamReader,
  TranslatedAnswer,
  UpstreamReply,
  UpstreamTarget
} from "./UpstreamReply.ts"

const encoder = new TextEncoder()

export class Upstream extends Context.Service<
  Upstream,
  {
    /**
     * A JSON request to the provider's `path`, its answer relayed as the provider sends it: the
     * whole body, or the stream's bytes as they arrive with the events `readStream` finds in them
     * (read on the side, for the record).
     */
    readonly relay: (
      target: UpstreamTarget,
      path: string,
      body: Readonly<Record<string, unknown>>,
      options: ChatOptions,
      readStream: StreamReader
    ) => Effect.Effect<UpstreamReply, UpstreamFailure>
    /**
     * A request translated from another API into the provider's (its adapter did that once, by
     * `translation`), sent there; the answer goes back as `answer` encodes it, in the client's API.
     */
    readonly translated: (
      target: UpstreamTarget,
      translation: ChatTranslation,
      body: Readonly<Record<string, unknown>>,
      options: ChatOptions,
      answer: TranslatedAnswer
    ) => Effect.Effect<UpstreamReply, UpstreamFailure>
    readonly models: (target: UpstreamTarget) => Effect.Effect<UpstreamReply, UpstreamFailure>
    /** Whether a stream whose client did not ask for its usage asks for it (`UPSTREAM_STREAM_USAGE`). */
    readonly asksStreamUsage: boolean
    /**
     * Sends a call as it came (with the target's key) and hands back the provider's answer unread; an
     * error's (status >= 400) is read, at most `MAX_ERROR_BODY_BYTES`, with the keys redacted.
     */
    readonly passthrough: (
      target: UpstreamTarget,
      request: PassthroughRequest
    ) => Effect.Effect<PassthroughReply, UpstreamTimeout | UpstreamUnreachable>
  }
>()("gateway/upstream/Upstream") {
  static readonly layer = Layer.effect(
    Upstream,
    Effect.gen(function* () {
      const config = yield* UpstreamConfig
      const http = yield* UpstreamHttp

      /** Each provider's base URL split once into the origin (the connection pool) and the path prefix. */
      const endpoints = Object.fromEntries(
        providerNames.map((name) => [name, splitBaseUrl(config[name].baseUrl)])
      ) as Record<UpstreamProvider, ReturnType<typeof splitBaseUrl>>
      const servers = Object.fromEntries(
        providerNames.map((name) => [name, serverAttributes(config[name].baseUrl)])
      ) as Record<UpstreamProvider, ReturnType<typeof serverAttributes>>

      /** The target's key as its provider takes it (with the client's headers: an API version it names). */
      const authorize = (target: UpstreamTarget, client: Readonly<Record<string, string | undefined>>) =>
        providerOf(target.provider).authHeaders(Redacted.value(target.apiKey), client)

      const send = (
        target: UpstreamTarget,
        method: "GET" | "POST",
        path: string,
        headers: Readonly<Record<string, string>>,
        body?: string
      ) => {
        const { origin, prefix } = target.endpoint ?? endpoints[target.provider]
        return Effect.flatMap(currentTraceparent, (traceparent) =>
          http.send({
            method,
            origin,
            path: `${prefix}${path}`,
            firstByteTimeoutMs: target.firstByteTimeoutMs,
            headers: {
              ...headers,
              ...authorize(target, headers),
              "accept-encoding": "identity",
              ...(body === undefined ? {} : { "content-type": "application/json" }),
              // The provider's side joins the trace (W3C Trace Context).
              ...Option.match(traceparent, { onNone: () => ({}), onSome: (value) => ({ traceparent: value }) })
            },
            ...(body === undefined ? {} : { body })
          })
        )
      }

      /** Keys the gateway holds: never echoed back, whatever a provider puts in its error. */
      const configuredKeys = providerNames.flatMap((name) => {
        const key = config[name].apiKey
        return Option.isSome(key) ? [Redacted.value(key.value)] : []
      })

      /**
       * A non-2xx answer as an error the client sees with the provider's status and message. Only
       * the first 64 KB of the body are read: a provider (or a proxy in between) may send megabytes.
       */
      const failed = (response: UpstreamResponse, target: UpstreamTarget) =>
        Effect.flatMap(http.readBodyUpTo(response, MAX_ERROR_BODY_BYTES), ({ bytes, truncated }) => {
          const headers: Record<string, string> = {}
          for (const [name, value] of Object.entries(response.headers)) {
            if (ERROR_HEADERS.test(name)) headers[name] = value
          }
          const detail = errorDetail(new TextDecoder().decode(bytes), truncated)
          const message = redactSecrets(detail.message ?? `The upstream provider answered ${response.status}`, [
            Redacted.value(target.apiKey),
            ...configuredKeys
          ])
          // The provider failing or throttling is the operator's business (a client's bad request is not).
          const logged =
            response.status >= 500 || response.status === 429
              ? Effect.logWarning(`upstream ${target.provider} answered ${response.status}: ${message.slice(0, 300)}`)
              : Effect.void
          return Effect.andThen(
            logged,
            Effect.fail(
              new UpstreamError({
                status: response.status,
                message,
                upstreamType: detail.type,
                upstreamCode: detail.code,
                param: detail.param,
                headers
              })
            )
          )
        })

      /**
       * A JSON request whose answer goes back as the provider sent it: the whole body, or the stream's
       * bytes as they arrive with the events `readStream` finds in them (read on the side, for the record).
       * `traced`: the call's span while it is exported, which notes what the answer says of itself and,
       * for a stream, ends with it (`ProviderSpan`).
       */
      const relayed = Effect.fnUntraced(function* (
        target: UpstreamTarget,
        path: string,
        body: Readonly<Record<string, unknown>>,
        options: ChatOptions,
        readStream: StreamReader,
        traced: ProviderSpan | undefined,
        scope: Scope.Scope | undefined
      ): Effect.fn.Return<UpstreamReply, UpstreamFailure> {
        const response = yield* send(target, "POST", path, options.headers, JSON.stringify(body))
        traced?.span.attribute("http.response.status_code", response.status)
        if (response.status < 200 || response.status >= 300) return yield* failed(response, target)
        const headers = relayHeaders(response.headers)
        const contentType = response.headers["content-type"] ?? "application/json"
        if (contentType.startsWith("text/event-stream")) {
          const read = readStream()
          const body = yield* http.stream(response, scope)
          const pieces =
            traced === undefined
              ? body.pipe(Stream.map(read))
              : body.pipe(
                  Stream.map((bytes) => notePiece(traced.span, read(bytes))),
                  Stream.onExit((exit) => traced.end(exit))
                )
          return {
            _tag: "EventStream",
            status: response.status,
            headers,
            pieces,
            cut: (error: UpstreamStreamError) => http.cut(response, error)
          } as const
        }
        const answer = yield* http.readBody(response)
        // Parsed once, for the span, the metrics and the record (`respond`).
        const json = parseAnswer(answer)
        const { model, usage } = readAnswerBody(providerOf(target.provider).usage[path], json)
        if (traced !== undefined) noteAnswer(traced.span, model, usage)
        return { _tag: "Body", status: response.status, headers, contentType, body: answer, usage, json } as const
      })

      /** A request translated into the provider's API, sent there; the answer translated back as `answer` says. */
      const translated = Effect.fnUntraced(function* (
        target: UpstreamTarget,
        translation: ChatTranslation,
        body: Readonly<Record<string, unknown>>,
        options: ChatOptions,
        answer: TranslatedAnswer,
        traced: ProviderSpan | undefined,
        scope: Scope.Scope | undefined
      ): Effect.fn.Return<UpstreamReply, UpstreamFailure> {
        const response = yield* send(target, "POST", translation.path, options.headers, JSON.stringify(body))
        traced?.span.attribute("http.response.status_code", response.status)
        if (response.status < 200 || response.status >= 300) return yield* failed(response, target)
        const headers = relayHeaders(response.headers)
        const created = Math.floor(Date.now() / 1000)
        if ((response.headers["content-type"] ?? "").startsWith("text/event-stream")) {
          const translator = translation.stream({ includeUsage: answer.includeUsage, created })
          const encode = answer.encodeStream(created)
          const pieces = (yield* http.stream(response, scope)).pipe(
            Stream.mapEffect((chunk) =>
              Effect.fromResult(
                Result.map(translator.feed(chunk), (events) => {
                  const piece = encode(events)
                  const usage = translator.usageFed()
                  return usage === undefined ? piece : { ...piece, usage }
                })
              )
            ),
            Stream.filter((piece) => piece.events.length > 0 || piece.usage !== undefined)
          )
          return {
            _tag: "EventStream",
            status: response.status,
            headers: { ...headers, "content-type": "text/event-stream; charset=utf-8" },
            // The usage is the translator's (the client's stream carries it only when asked for).
            pieces:
              traced === undefined
                ? pieces
                : pieces.pipe(
                    Stream.onExit((exit) => {
                      const { model, usage } = translator.answer()
                      noteAnswer(traced.span, model, usage)
                      return traced.end(exit)
                    })
                  ),
            cut: (error: UpstreamStreamError) => http.cut(response, error)
          } as const
        }
        const { completion, usage } = yield* Effect.fromResult(
          translation.answer(yield* http.readBody(response), created)
        )
        if (traced !== undefined) noteAnswer(traced.span, completion.model, usage)
        const json = answer.encodeBody(completion)
        return {
          _tag: "Body",
          status: response.status,
          headers,
          contentType: "application/json",
          body: encoder.encode(JSON.stringify(json)),
          usage,
          json
        } as const
      })

      const models = Effect.fn("upstream models")(function* (target: UpstreamTarget) {
        yield* Effect.annotateCurrentSpan("gen_ai.provider.name", target.provider)
        const response = yield* send(target, "GET", "/models", {})
        yield* Effect.annotateCurrentSpan("http.response.status_code", response.status)
        if (response.status < 200 || response.status >= 300) return yield* failed(response, target)
        const body = yield* http.readBody(response)
        const headers = relayHeaders(response.headers)
        const { modelList } = providerOf(target.provider)
        if (modelList === undefined) {
          return {
            _tag: "Body",
            status: response.status,
            headers,
            contentType: response.headers["content-type"] ?? "application/json",
            body
          } as const
        }
        const list = yield* Effect.fromResult(modelList(body))
        return {
          _tag: "Body",
          status: response.status,
          headers,
          contentType: "application/json",
          body: encoder.encode(JSON.stringify(list))
        } as const
      })

      // Until the answer's head: a success's body is relayed as it comes, never buffered. The path stays
      // out of the span (a client's).
      const passthrough = Effect.fn("upstream passthrough")(function* (
        target: UpstreamTarget,
        request: PassthroughRequest
      ) {
        yield* Effect.annotateCurrentSpan({
          "gen_ai.provider.name": target.provider,
          "http.request.method": request.method
        })
        const { origin, prefix } = endpoints[target.provider]
        const traceparent = yield* currentTraceparent
        const response = yield* http.send({
          method: request.method,
          origin,
          path: `${prefix}${request.path}`,
          headers: {
            ...request.headers,
            ...authorize(target, request.headers),
            ...Option.match(traceparent, { onNone: () => ({}), onSome: (value) => ({ traceparent: value }) })
          },
          body: request.body
        })
        yield* Effect.annotateCurrentSpan("http.response.status_code", response.status)
        const headers: Record<string, string> = {}
        for (const [name, value] of Object.entries(response.headers)) {
          if (!PASSTHROUGH_HOP_HEADERS.has(name)) headers[name] = value
        }
        if (response.status < 400) return { status: response.status, headers, body: response.body }
        // An error may echo the key sent (a 401's "Incorrect API key provided: sk-…"): read, redacted.
        const { bytes, truncated } = yield* http.readBodyUpTo(response, MAX_ERROR_BODY_BYTES)
        const redacted = redactedErrorAnswer(
          { status: response.status, headers, bytes, truncated },
          [Redacted.value(target.apiKey), ...configuredKeys],
          providerOf(target.provider)
        )
        return { status: response.status, ...redacted }
      })

      const providerStage = stageTimed(UPSTREAM_CHAT_SPAN)

      /**
       * A call to a provider's model API: timed as the `Upstream.chat` stage (until the answer's head,
       * or the whole body), under its span (`providerSpan.ts`). While spans are exported, the span
       * carries the GenAI attributes and ends once: with the call, or for a stream with the stream, or
       * with the request's scope when the stream is never run to its end (`traceProviderCall`);
       * otherwise the call takes the plain path. The span is made and its end attached with no
       * interruption in between: an interrupted call still ends it. Traced or not, a streamed answer's
       * body is held by the request's scope until its stream runs: one never run is let go, its
       * connection closed, when the request ends (`UpstreamHttp.stream`).
       */
      const modelCall = (
        path: string,
        target: UpstreamTarget,
        body: Readonly<Record<string, unknown>>,
        call: (
          traced: ProviderSpan | undefined,
          scope: Scope.Scope | undefined
        ) => Effect.Effect<UpstreamReply, UpstreamFailure>
      ): Effect.Effect<UpstreamReply, UpstreamFailure> =>
        Effect.withFiber((fiber) => {
          const name = providerSpanName(path)
          const scope = Context.getOrUndefined(fiber.context, Scope.Scope)
          if (fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer)
            return providerStage(requestSpan(name)(call(undefined, scope)))
          return Effect.uninterruptibleMask((restore) =>
            Effect.flatMap(
              Effect.makeSpan(name, {
                kind: "client",
                attributes: requestAttributes(target.provider, body, servers[target.provider])
              }),
              (span) =>
                Effect.flatMap(span.sampled ? traceProviderCall(span, scope) : Effect.undefined, (traced) =>
                  restore(call(traced, scope).pipe(Effect.withParentSpan(span), providerStage)).pipe(
                    Effect.onExit((exit) =>
                      traced === undefined
                        ? endProviderSpan(span, exit)
                        : // A stream's span ends with the stream (or the request).
                          Exit.isSuccess(exit) && exit.value._tag === "EventStream"
                          ? Effect.void
                          : traced.end(exit)
                    )
                  )
                )
            )
          )
        })

      return Upstream.of({
        passthrough,
        asksStreamUsage: config.streamUsage,
        relay: (target, path, body, options, readStream) =>
          modelCall(path, target, body, (traced, scope) =>
            relayed(target, path, body, options, readStream, traced, scope)
          ),
        translated: (target, translation, body, options, answer) =>
          modelCall(translation.path, target, body, (traced, scope) =>
            translated(target, translation, body, options, answer, traced, scope)
          ),
        models
      })
    })
  ).pipe(Layer.provide([UpstreamHttp.layer]))
}

/**
 * The stage of a provider call (until its response head, or its whole body) in the request's timings
 * and `gateway_stage_seconds`: the time the gateway does not count as its own. Its span is named by
 * the API called (`providerSpan.ts`).
 */
export const UPSTREAM_CHAT_SPAN = "Upstream.chat"
