import type { Readable } from "node:stream"
import { Context, Effect, Exit, Layer, Option, Redacted, Result, Schema, Scope, Stream, Tracer } from "effect"
import { toOpenAiCompletion, toOpenAiModelList } from "../anthropic/fromAnthropic.ts"
import { AnthropicMessage, AnthropicModelList } from "../anthropic/messages.ts"
import { makeStreamTranslator } from "../anthropic/streamTranslator.ts"
import type { TokenUsage } from "../domain/TokenUsage.ts"
import { requestSpan, stageTimed } from "../observability/requestSpan.ts"
import { currentTraceparent } from "../observability/traceContext.ts"
import type { ChatCompletion } from "../openai/chat.ts"
import type { StreamEvent, StreamPiece } from "../openai/stream.ts"
import { errorDetail, MAX_ERROR_BODY_BYTES } from "./errorBody.ts"
import {
  redactSecrets,
  UpstreamError,
  type UpstreamFailure,
  type UpstreamStreamError,
  type UpstreamTimeout,
  UpstreamUnreachable
} from "./errors.ts"
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
import { messagesUsage, parseAnswer, readAnswerBody } from "./providerUsage.ts"
import { UpstreamConfig, type UpstreamProvider } from "./UpstreamConfig.ts"
import { UpstreamHttp, type UpstreamResponse } from "./UpstreamHttp.ts"

/** Which provider a request goes to, with which key. Base URLs come only from configuration. */
export interface UpstreamTarget {
  readonly provider: UpstreamProvider
  readonly apiKey: Redacted.Redacted<string>
}

/** A provider's answer: in the OpenAI format (chat completions), or as Anthropic sent it (Messages). */
export type UpstreamReply =
  | {
      readonly _tag: "Body"
      readonly status: number
      readonly headers: Readonly<Record<string, string>>
      readonly contentType: string
      /** Relayed byte for byte (OpenAI) or as translated (Anthropic). */
      readonly body: Uint8Array
      /** The provider's token usage in the answer (a model call's: none from `models`, or when it has none). */
      readonly usage?: TokenUsage | undefined
      /** The body's JSON, parsed once (a model call's answer; `undefined`: none, or not JSON). */
      readonly json?: unknown
    }
  | {
      readonly _tag: "EventStream"
      readonly status: number
      readonly headers: Readonly<Record<string, string>>
      /**
       * SSE bytes as they arrive (OpenAI) or as translated (Anthropic), with the chunks they carry and,
       * on the piece that carried it, the provider's token usage; fails in-band after the response has started.
       */
      readonly pieces: Stream.Stream<StreamPiece, UpstreamStreamError>
      /** Ends `pieces` early with `error` (the provider's connection closed). */
      readonly cut: (error: UpstreamStreamError) => void
    }

/** A call the gateway passes through unread (files, embeddings, audio, batches, …). */
export interface PassthroughRequest {
  readonly method: string
  /** The path after the provider's base URL, with the query: `/files?purpose=batch`. */
  readonly path: string
  /** The client's headers, already without the gateway's own and the hop-by-hop ones. */
  readonly headers: Readonly<Record<string, string>>
  /** Streamed to the provider as it arrives; `null` without a body. */
  readonly body: Readable | null
}

/**
 * The provider's answer to a passed-through call: status and headers as sent, the body as it arrives;
 * an error's body (status >= 400) read and relayed with the keys redacted (`passthroughError.ts`).
 */
export interface PassthroughReply {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Readable | Uint8Array
}

export interface ChatOptions {
  /** Client headers passed on to the provider (already filtered). */
  readonly headers: Readonly<Record<string, string>>
}

/** A reader of a provider's stream, made per answer: the events each piece of bytes completes. */
export type StreamReader = () => (bytes: Uint8Array) => StreamPiece

/**
 * How an answer from Anthropic goes back in the format of the API the client called: a stream's
 * events (read as chat chunks) written as that API's events, a whole answer (read as a chat
 * completion) as that API's object.
 */
export interface TranslatedAnswer {
  /** The stream ends with a usage chunk (the client asked for it, or its API always carries it). */
  readonly includeUsage: boolean
  readonly encodeStream: (created: number) => (events: ReadonlyArray<StreamEvent>) => StreamPiece
  readonly encodeBody: (completion: ChatCompletion) => unknown
}

const ANTHROPIC_VERSION = "2023-06-01"

/** Response headers that describe the hop, not the answer. */
const HOP_HEADERS = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "content-length",
  "content-encoding",
  "set-cookie",
  "proxy-authenticate",
  "trailer",
  "upgrade"
])

/** Provider headers relayed with an error (the rest describe a body we replace). */
const ERROR_HEADERS = /^(retry-after|retry-after-ms|x-request-id|request-id|x-ratelimit-.*|anthropic-ratelimit-.*)$/

/**
 * Response headers of the connection, not the answer, dropped from a passed-through answer; its
 * length and encoding stay, since its bytes are relayed as sent. Provider cookies (e.g. a CDN's)
 * belong to the provider's host, not the gateway's.
 */
const PASSTHROUGH_HOP_HEADERS = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "proxy-authenticate",
  "trailer",
  "upgrade",
  "set-cookie"
])

const relayHeaders = (headers: Readonly<Record<string, string>>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (!HOP_HEADERS.has(name)) out[name] = value
  }
  return out
}

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
     * An Anthropic Messages request translated from another API (its adapter did that once), sent
     * to Anthropic; the answer goes back as `answer` encodes it, in the client's API.
     */
    readonly viaAnthropic: (
      target: UpstreamTarget,
      body: Readonly<Record<string, unknown>>,
      options: ChatOptions,
      answer: TranslatedAnswer
    ) => Effect.Effect<UpstreamReply, UpstreamFailure>
    readonly models: (target: UpstreamTarget) => Effect.Effect<UpstreamReply, UpstreamFailure>
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
      const endpoints = {
        openai: splitBaseUrl(config.openai.baseUrl),
        anthropic: splitBaseUrl(config.anthropic.baseUrl)
      }
      const servers = {
        openai: serverAttributes(config.openai.baseUrl),
        anthropic: serverAttributes(config.anthropic.baseUrl)
      }

      /** The target's key, and for Anthropic the API version (the gateway's unless the client named one). */
      const authorize = (target: UpstreamTarget, anthropicVersion = ANTHROPIC_VERSION) =>
        target.provider === "anthropic"
          ? { "x-api-key": Redacted.value(target.apiKey), "anthropic-version": anthropicVersion }
          : { authorization: `Bearer ${Redacted.value(target.apiKey)}` }

      const send = (
        target: UpstreamTarget,
        method: "GET" | "POST",
        path: string,
        headers: Readonly<Record<string, string>>,
        body?: string
      ) => {
        const { origin, prefix } = endpoints[target.provider]
        return Effect.flatMap(currentTraceparent, (traceparent) =>
          http.send({
            method,
            origin,
            path: `${prefix}${path}`,
            headers: {
              ...headers,
              ...authorize(target, headers["anthropic-version"]),
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
      const configuredKeys = [config.openai.apiKey, config.anthropic.apiKey].flatMap((key) =>
        Option.isSome(key) ? [Redacted.value(key.value)] : []
      )

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
        const { model, usage } = readAnswerBody(path, json)
        if (traced !== undefined) noteAnswer(traced.span, model, usage)
        return { _tag: "Body", status: response.status, headers, contentType, body: answer, usage, json } as const
      })

      /** A request translated for Anthropic, sent there; the answer translated back as `answer` says. */
      const viaAnthropic = Effect.fnUntraced(function* (
        target: UpstreamTarget,
        body: Readonly<Record<string, unknown>>,
        options: ChatOptions,
        answer: TranslatedAnswer,
        traced: ProviderSpan | undefined,
        scope: Scope.Scope | undefined
      ): Effect.fn.Return<UpstreamReply, UpstreamFailure> {
        const response = yield* send(target, "POST", "/messages", options.headers, JSON.stringify(body))
        traced?.span.attribute("http.response.status_code", response.status)
        if (response.status < 200 || response.status >= 300) return yield* failed(response, target)
        const headers = relayHeaders(response.headers)
        const created = Math.floor(Date.now() / 1000)
        if ((response.headers["content-type"] ?? "").startsWith("text/event-stream")) {
          const translator = makeStreamTranslator({ includeUsage: answer.includeUsage, created })
          const encode = answer.encodeStream(created)
          const translated = (yield* http.stream(response, scope)).pipe(
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
          // The usage is the translator's (the client's stream carries it only when asked for).
          const pieces =
            traced === undefined
              ? translated
              : translated.pipe(
                  Stream.onExit((exit) => {
                    const { model, usage } = translator.answer()
                    noteAnswer(traced.span, model, usage)
                    return traced.end(exit)
                  })
                )
          return {
            _tag: "EventStream",
            status: response.status,
            headers: { ...headers, "content-type": "text/event-stream; charset=utf-8" },
            pieces,
            cut: (error: UpstreamStreamError) => http.cut(response, error)
          } as const
        }
        const message = yield* decodeBody(AnthropicMessage, yield* http.readBody(response))
        // Read once, for the translation, the span and the metrics (`respond`).
        const usage = messagesUsage(message.usage)
        const completion = toOpenAiCompletion(message, created, usage)
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
        if (target.provider === "openai") {
          return {
            _tag: "Body",
            status: response.status,
            headers,
            contentType: response.headers["content-type"] ?? "application/json",
            body
          } as const
        }
        const list = yield* decodeBody(AnthropicModelList, body)
        return {
          _tag: "Body",
          status: response.status,
          headers,
          contentType: "application/json",
          body: encoder.encode(JSON.stringify(toOpenAiModelList(list)))
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
            ...authorize(target, request.headers["anthropic-version"]),
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
          target.provider
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
        relay: (target, path, body, options, readStream) =>
          modelCall(path, target, body, (traced, scope) =>
            relayed(target, path, body, options, readStream, traced, scope)
          ),
        viaAnthropic: (target, body, options, answer) =>
          modelCall("/messages", target, body, (traced, scope) =>
            viaAnthropic(target, body, options, answer, traced, scope)
          ),
        models
      })
    })
  )
}

/**
 * The stage of a provider call (until its response head, or its whole body) in the request's timings
 * and `gateway_stage_seconds`: the time the gateway does not count as its own. Its span is named by
 * the API called (`providerSpan.ts`).
 */
export const UPSTREAM_CHAT_SPAN = "Upstream.chat"

/** `https://host:port/v1` → origin `https://host:port`, prefix `/v1`. */
const splitBaseUrl = (baseUrl: string) => {
  const url = new URL(baseUrl)
  return { origin: url.origin, prefix: url.pathname.replace(/\/+$/, "") }
}

/** A provider answer in its documented shape, or a 502: the provider sent something else. */
const decodeBody = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S, bytes: Uint8Array) =>
  Schema.decodeUnknownEffect(Schema.fromJsonString(schema))(new TextDecoder().decode(bytes)).pipe(
    Effect.mapError(() => new UpstreamUnreachable({ message: "The upstream provider sent a malformed response" }))
  )
