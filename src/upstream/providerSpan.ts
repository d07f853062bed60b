import { Cause, Clock, Effect, Exit, Option, Scope, type Tracer } from "effect"
import type { TokenUsage } from "../domain/TokenUsage.ts"
import type { StreamPiece } from "../providers/openai/stream.ts"
import type { UpstreamProvider } from "./UpstreamConfig.ts"

/**
 * The span of a call to a provider's model API, named by the API it calls (`upstream chat.completions`,
 * `upstream responses`, `upstream messages`) — a path of the gateway's own, never a client's — with
 * OpenTelemetry's GenAI attributes: the provider, the operation, the model asked for and the one that
 * answered, the status, and the tokens counted when the answer carries them (its `TokenUsage`, read
 * once where the answer is read: the metrics count the same). While spans are exported it lasts until
 * the answer has been received (a whole body read, a stream's last event: where a stream's usage is);
 * the answer is never held for it. It ends once (`traceProviderCall`).
 */
export const providerSpanName = (path: string) => `upstream ${path.slice(1).replaceAll("/", ".")}`

/** Where a provider is, for `server.address` and `server.port`. */
export const serverAttributes = (baseUrl: string) => {
  const url = new URL(baseUrl)
  return {
    "server.address": url.hostname,
    "server.port": url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port)
  }
}

/** The request's attributes: every API the gateway proxies is a chat (OpenTelemetry's `gen_ai.operation.name`). */
export const requestAttributes = (
  provider: UpstreamProvider,
  body: Readonly<Record<string, unknown>>,
  server: ReturnType<typeof serverAttributes>
): Record<string, unknown> => {
  const model = body["model"]
  return {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": provider,
    // The name before `gen_ai.provider.name`, which many backends still read.
    "gen_ai.system": provider,
    ...(typeof model === "string" ? { "gen_ai.request.model": model } : {}),
    ...server
  }
}

/**
 * Notes the model that answered and the tokens counted: the input including the cached input and
 * the cache writes, as OpenAI counts it and OpenTelemetry asks, and of it what was read from and
 * written to the provider's cache.
 */
export const noteAnswer = (span: Tracer.Span, model: string | undefined, usage: TokenUsage | undefined) => {
  if (model !== undefined && model !== "") span.attribute("gen_ai.response.model", model)
  if (usage !== undefined) {
    span.attribute("gen_ai.usage.input_tokens", usage.input)
    span.attribute("gen_ai.usage.output_tokens", usage.output)
    span.attribute("gen_ai.usage.cache_read.input_tokens", usage.cachedInput)
    span.attribute("gen_ai.usage.cache_creation.input_tokens", usage.cacheWrite)
  }
}

/**
 * Notes what a stream's pieces say of the answer as they pass: the model on its chunks, the usage on
 * the piece that carried it (the last, when the provider sends one).
 */
export const notePiece = (span: Tracer.Span, piece: StreamPiece): StreamPiece => {
  for (const event of piece.events) {
    if (event._tag === "Chunk") noteAnswer(span, event.chunk.model, undefined)
  }
  if (piece.usage !== undefined) noteAnswer(span, undefined, piece.usage)
  return piece
}

/** Ends the span with how the call went; a failure names its kind (`error.type`: the provider's status, or the error's tag). */
export const endProviderSpan = (span: Tracer.Span, exit: Exit.Exit<unknown, unknown>) =>
  Effect.flatMap(Clock.currentTimeNanos, (now) =>
    Effect.sync(() => {
      if (span.status._tag === "Ended") return
      // A call cut short (the client went away, shutdown) is no error of the provider's.
      if (Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)) {
        const error = Cause.findErrorOption(exit.cause)
        span.attribute("error.type", Option.match(error, { onNone: () => "_OTHER", onSome: errorType }))
      }
      span.end(now, exit)
    })
  )

/**
 * An exported provider span and its end, which comes once, whichever comes first: the call's (a
 * whole answer, a failure), its stream's (run to its end, failed, or interrupted), or, for a stream
 * that is never run to its end (the client went away before its body was written, the request was
 * interrupted after the call returned), the close of the request's scope.
 */
export interface ProviderSpan {
  readonly span: Tracer.Span
  readonly end: (exit: Exit.Exit<unknown, unknown>) => Effect.Effect<void>
}

/**
 * The call's span with its end, held by `scope` (the request's: the HTTP server closes it once the
 * response has been written, or once the request is interrupted): if nothing has ended the span by
 * then, the answer was never read, and the span ends as cut short (interrupted, as a client that
 * hangs up mid-stream leaves it). Held in a scope of its own within the request's, let go when the
 * span ends. Without an open scope, the span ends only with the call or its stream.
 */
export const traceProviderCall = (span: Tracer.Span, scope: Scope.Scope | undefined): Effect.Effect<ProviderSpan> =>
  scope === undefined || scope.state._tag === "Closed"
    ? Effect.succeed({ span, end: (exit) => endProviderSpan(span, exit) })
    : Effect.flatMap(Scope.fork(scope), (held) =>
        Effect.as(Scope.addFinalizer(held, endProviderSpan(span, Exit.interrupt())), {
          span,
          end: (exit: Exit.Exit<unknown, unknown>) =>
            Effect.andThen(endProviderSpan(span, exit), Scope.close(held, Exit.void))
        })
      )

const errorType = (error: unknown): string => {
  if (typeof error !== "object" || error === null) return "_OTHER"
  if ("status" in error && typeof error.status === "number") return String(error.status)
  return "_tag" in error && typeof error._tag === "string" ? error._tag : "_OTHER"
}
