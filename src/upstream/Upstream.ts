import { NodeHttpClient } from "@effect/platform-node"
import { Context, Effect, Layer, Predicate, Redacted, Result, Stream } from "effect"
import { HttpClient, HttpClientError, HttpClientRequest, type HttpClientResponse } from "effect/http"
import { AppConfig, type UpstreamProvider } from "../config/AppConfig.ts"
import { toAnthropicRequest } from "./anthropic/request.ts"
import { toOpenAiCompletion, toOpenAiModelList } from "./anthropic/response.ts"
import { makeStreamTranslator } from "./anthropic/stream.ts"
import {
  redactSecrets,

  UpstreamError,
  type UpstreamFailure,
  UpstreamStreamError,
  UpstreamTimeout,
  UpstreamUnreachable
} from "./errors.ts"

/** Which provider a request goes to, with which key. Base URLs come only from configuration. */
export interface UpstreamTarget {
  readonly provider: UpstreamProvider
  readonly apiKey: Redacted.Redacted<string>
}

/** A provider's answer, already in the OpenAI format. */
export type UpstreamReply =
  | {
    readonly _tag: "Body"
    readonly status: number
    readonly headers: Readonly<Record<string, string>>
    readonly contentType: string
    /** Relayed byte for byte (OpenAI) or as translated (Anthropic). */
    readonly body: Uint8Array
  }
  | {
    readonly _tag: "EventStream"
    readonly status: number
    readonly headers: Readonly<Record<string, string>>
    /** SSE bytes as they arrive; fails in-band after the response has started. */
    readonly events: Stream.Stream<Uint8Array, UpstreamStreamError>
  }

export interface ChatOptions {
  /** Client headers passed on to the provider (already filtered). */
  readonly headers: Readonly<Record<string, string>>
  readonly includeUsage: boolean
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

const relayHeaders = (headers: Readonly<Record<string, string>>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (!HOP_HEADERS.has(name)) out[name] = value
  }
  return out
}

const encoder = new TextEncoder()

export class Upstream extends Context.Service<Upstream, {
  readonly chat: (
    target: UpstreamTarget,
    body: Readonly<Record<string, unknown>>,
    options: ChatOptions
  ) => Effect.Effect<UpstreamReply, UpstreamFailure>
  readonly models: (target: UpstreamTarget) => Effect.Effect<UpstreamReply, UpstreamFailure>
}>()("gateway/upstream/Upstream") {
  static readonly layer = Layer.effect(
    Upstream,
    Effect.gen(function*() {
      const config = (yield* AppConfig).upstream
      const client = yield* HttpClient.HttpClient

      const endpoint = (target: UpstreamTarget) => config[target.provider]

      const authorize = (target: UpstreamTarget) =>
        target.provider === "anthropic"
          ? { "x-api-key": Redacted.value(target.apiKey), "anthropic-version": ANTHROPIC_VERSION }
          : { authorization: `Bearer ${Redacted.value(target.apiKey)}` }

      const timedOut = () =>
        new UpstreamTimeout({ message: `The upstream provider did not answer within ${config.firstByteTimeoutMs} ms` })

      /** Sends one request; everything up to the response headers is bounded by the first-byte timeout. */
      const send = (request: HttpClientRequest.HttpClientRequest) =>
        client.execute(request).pipe(
          // Our trace ids are nobody's business at the provider.
          Effect.provideService(HttpClient.TracerPropagationEnabled, false),
          Effect.timeoutOrElse({ duration: config.firstByteTimeoutMs, orElse: () => Effect.fail(timedOut()) }),
          Effect.catchTag("HttpClientError", (error) => Effect.fail(transportFailure(error)))
        )

      const readBody = (response: HttpClientResponse.HttpClientResponse) =>
        response.arrayBuffer.pipe(
          Effect.map((buffer) => new Uint8Array(buffer)),
          Effect.timeoutOrElse({ duration: config.firstByteTimeoutMs, orElse: () => Effect.fail(timedOut()) }),
          Effect.catchTag("HttpClientError", (error) => Effect.fail(transportFailure(error)))
        )

      /** A non-2xx answer as an error the client sees with the provider's status and message. */
      const failed = (response: HttpClientResponse.HttpClientResponse, target: UpstreamTarget) =>
        Effect.flatMap(readBody(response), (bytes) => {
          const headers: Record<string, string> = {}
          for (const [name, value] of Object.entries(response.headers)) {
            if (ERROR_HEADERS.test(name)) headers[name] = value
          }
          const detail = errorDetail(new TextDecoder().decode(bytes))
          return Effect.fail(
            new UpstreamError({
              status: response.status,
              message: redactSecrets(detail.message ?? `The upstream provider answered ${response.status}`, [
                Redacted.value(target.apiKey)
              ]),
              upstreamType: detail.type,
              upstreamCode: detail.code,
              param: detail.param,
              headers
            })
          )
        })

      const chatOpenAi = Effect.fn("Upstream.chatOpenAi")(function*(
        target: UpstreamTarget,
        body: Readonly<Record<string, unknown>>,
        options: ChatOptions
      ) {
        const request = HttpClientRequest.post(`${endpoint(target).baseUrl}/chat/completions`).pipe(
          HttpClientRequest.setHeaders({
            ...options.headers,
            ...authorize(target),
            "accept-encoding": "identity"
          }),
          HttpClientRequest.bodyText(JSON.stringify(body), "application/json")
        )
        const response = yield* send(request)
        if (response.status < 200 || response.status >= 300) return yield* failed(response, target)
        const headers = relayHeaders(response.headers)
        const contentType = response.headers["content-type"] ?? "application/json"
        if (contentType.startsWith("text/event-stream")) {
          return { _tag: "EventStream", status: response.status, headers, events: streamOf(response) } as const
        }
        return { _tag: "Body", status: response.status, headers, contentType, body: yield* readBody(response) } as const
      })

      const chatAnthropic = Effect.fn("Upstream.chatAnthropic")(function*(
        target: UpstreamTarget,
        body: Readonly<Record<string, unknown>>,
        options: ChatOptions
      ) {
        const translated = toAnthropicRequest(body)
        if (Result.isFailure(translated)) return yield* translated.failure
        const request = HttpClientRequest.post(`${endpoint(target).baseUrl}/messages`).pipe(
          HttpClientRequest.setHeaders({ ...options.headers, ...authorize(target), "accept-encoding": "identity" }),
          HttpClientRequest.bodyText(JSON.stringify(translated.success), "application/json")
        )
        const response = yield* send(request)
        if (response.status < 200 || response.status >= 300) return yield* failed(response, target)
        const headers = relayHeaders(response.headers)
        const created = Math.floor(Date.now() / 1000)
        if ((response.headers["content-type"] ?? "").startsWith("text/event-stream")) {
          const translator = makeStreamTranslator({ includeUsage: options.includeUsage, created })
          const events = streamOf(response).pipe(
            Stream.mapEffect((chunk) => {
              const out = translator.feed(chunk)
              return Predicate.isString(out) ? Effect.succeed(encoder.encode(out)) : Effect.fail(out)
            }),
            Stream.filter((chunk) => chunk.length > 0)
          )
          return {
            _tag: "EventStream",
            status: response.status,
            headers: { ...headers, "content-type": "text/event-stream; charset=utf-8" },
            events
          } as const
        }
        const json = yield* parseJson(yield* readBody(response))
        return {
          _tag: "Body",
          status: response.status,
          headers,
          contentType: "application/json",
          body: encoder.encode(JSON.stringify(toOpenAiCompletion(json, created)))
        } as const
      })

      /** The body stream, with the idle timeout between chunks and failures reported in-band. */
      const streamOf = (response: HttpClientResponse.HttpClientResponse): Stream.Stream<Uint8Array, UpstreamStreamError> =>
        response.stream.pipe(
          Stream.mapError(() =>
            new UpstreamStreamError({ code: "upstream_stream_error", message: "The connection to the upstream provider broke" })
          ),
          Stream.timeoutOrElse({
            duration: config.idleTimeoutMs,
            orElse: () =>
              Stream.fail(
                new UpstreamStreamError({
                  code: "upstream_timeout",
                  message: `The upstream provider sent nothing for ${config.idleTimeoutMs} ms`
                })
              )
          })
        )

      const models = Effect.fn("Upstream.models")(function*(target: UpstreamTarget) {
        const request = HttpClientRequest.get(`${endpoint(target).baseUrl}/models`).pipe(
          HttpClientRequest.setHeaders({ ...authorize(target), "accept-encoding": "identity" })
        )
        const response = yield* send(request)
        if (response.status < 200 || response.status >= 300) return yield* failed(response, target)
        const body = yield* readBody(response)
        const headers = relayHeaders(response.headers)
        if (target.provider === "openai") {
          return { _tag: "Body", status: response.status, headers, contentType: response.headers["content-type"] ?? "application/json", body } as const
        }
        const json = yield* parseJson(body)
        return {
          _tag: "Body",
          status: response.status,
          headers,
          contentType: "application/json",
          body: encoder.encode(JSON.stringify(toOpenAiModelList(json)))
        } as const
      })

      return Upstream.of({
        chat: (target, body, options) =>
          target.provider === "anthropic" ? chatAnthropic(target, body, options) : chatOpenAi(target, body, options),
        models
      })
    })
  )

  /** Pooled keep-alive connections through undici, with the configured connect timeout. */
  static readonly layerHttpClient = Layer.unwrap(
    Effect.map(AppConfig, (config) =>
      NodeHttpClient.layerUndiciOptions({
        connect: { timeout: config.upstream.connectTimeoutMs },
        keepAliveTimeout: 30_000
      }))
  )
}

interface ErrorDetail {
  readonly message: string | null
  readonly type: string | null
  readonly code: string | null
  readonly param: string | null
}

const stringOrNull = (value: unknown) => (Predicate.isString(value) ? value : null)

/** The message of an OpenAI (`{error: {...}}`) or Anthropic (`{type: "error", error: {...}}`) error body. */
const errorDetail = (text: string): ErrorDetail => {
  try {
    const json: unknown = JSON.parse(text)
    const error = Predicate.isObject(json) ? json["error"] : undefined
    if (Predicate.isObject(error)) {
      return {
        message: stringOrNull(error["message"]),
        type: stringOrNull(error["type"]),
        code: stringOrNull(error["code"]),
        param: stringOrNull(error["param"])
      }
    }
    if (Predicate.isString(error)) return { message: error, type: null, code: null, param: null }
  } catch {
    // not JSON: fall through to the text itself
  }
  const trimmed = text.trim().slice(0, 500)
  return { message: trimmed === "" ? null : trimmed, type: null, code: null, param: null }
}

const parseJson = (bytes: Uint8Array) =>
  Effect.try({
    try: () => {
      const json: unknown = JSON.parse(new TextDecoder().decode(bytes))
      if (!Predicate.isObject(json)) throw new Error("not an object")
      return json
    },
    catch: () => new UpstreamUnreachable({ message: "The upstream provider sent a malformed response" })
  })

const causeCode = (cause: unknown): string | undefined => {
  for (let current = cause, depth = 0; Predicate.isObject(current) && depth < 5; depth++) {
    if (Predicate.isString(current["code"])) return current["code"]
    current = current["cause"]
  }
  return undefined
}

/** A failure to talk to the provider at all: unreachable (502) or too slow (504). */
const transportFailure = (error: HttpClientError.HttpClientError): UpstreamTimeout | UpstreamUnreachable => {
  const code = causeCode(error.reason.cause)
  if (code === "UND_ERR_CONNECT_TIMEOUT" || code === "UND_ERR_HEADERS_TIMEOUT" || code === "ETIMEDOUT") {
    return new UpstreamTimeout({ message: "Timed out connecting to the upstream provider" })
  }
  return new UpstreamUnreachable({
    message: `Could not reach the upstream provider${code === undefined ? "" : ` (${code})`}`
  })
}


