import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { AiError, EmbeddingModel } from "effect/ai"
import { redactSecrets } from "../providers/errors.ts"
import { UpstreamHttp } from "../upstream/UpstreamHttp.ts"
import type { EmbeddingSettings } from "./EmbeddingConfig.ts"

/** The longest a background batch may take; the request path has its own, much shorter budget. */
const CALL_TIMEOUT_MS = 60_000

/** The parts of an OpenAI-compatible `/embeddings` answer that are used. */
const EmbeddingsReply = Schema.Struct({
  data: Schema.Array(
    Schema.Struct({ index: Schema.Int, embedding: Schema.Array(Schema.Finite).check(Schema.isMinLength(1)) })
  ),
  usage: Schema.optionalKey(Schema.Struct({ prompt_tokens: Schema.optionalKey(Schema.Int) }))
})

const failure = (description: string, status?: number) =>
  AiError.make({
    module: "ProviderEmbeddingModel",
    method: "embedMany",
    reason:
      status === undefined
        ? new AiError.UnknownError({ description })
        : AiError.reasonFromHttpStatus({ status, description })
  })

/**
 * Embeddings from any OpenAI-compatible `/embeddings` endpoint (OpenAI, Azure, Ollama, vLLM, …):
 * `EMBEDDING_BASE_URL`, `EMBEDDING_MODEL`, `EMBEDDING_API_KEY`. Concurrent single requests are
 * sent as one batch (`EmbeddingModel.make`).
 */
export const ProviderEmbeddingModel = {
  modelId: (settings: EmbeddingSettings) => `provider/${new URL(settings.baseUrl).host}/${settings.model}`,
  layer: (settings: EmbeddingSettings) =>
    Layer.effect(
      EmbeddingModel.EmbeddingModel,
      Effect.gen(function* () {
        const http = yield* UpstreamHttp
        const key = Option.map(settings.apiKey, Redacted.value)
        const redact = (text: string) => redactSecrets(text, Option.toArray(key))
        return yield* EmbeddingModel.make({
          embedMany: Effect.fn("ProviderEmbeddingModel.embedMany")(function* ({ inputs }) {
            const body = { model: settings.model, input: inputs, encoding_format: "float" }
            const headers = Option.match(key, { onNone: () => ({}), onSome: (k) => ({ authorization: `Bearer ${k}` }) })
            const text = yield* http.postJson(`${settings.baseUrl}/embeddings`, headers, body).pipe(
              Effect.timeoutOrElse({
                duration: CALL_TIMEOUT_MS,
                orElse: () => Effect.fail(failure(`the embedding provider did not answer within ${CALL_TIMEOUT_MS} ms`))
              }),
              Effect.catchTags({
                UpstreamTimeout: (error) => Effect.fail(failure(`the embedding provider: ${error.message}`)),
                UpstreamUnreachable: (error) => Effect.fail(failure(`the embedding provider: ${error.message}`))
              }),
              Effect.flatMap(({ status, text }) =>
                status >= 200 && status < 300
                  ? Effect.succeed(text)
                  : Effect.fail(
                      failure(redact(`the embedding provider answered ${status}: ${text.slice(0, 300)}`), status)
                    )
              )
            )
            const reply = yield* Schema.decodeUnknownEffect(Schema.fromJsonString(EmbeddingsReply))(text).pipe(
              Effect.mapError(() => failure("the embedding provider sent a malformed /embeddings answer"))
            )
            const results = [...reply.data].sort((a, b) => a.index - b.index).map((item) => [...item.embedding])
            return { results, usage: { inputTokens: reply.usage?.prompt_tokens } }
          })
        })
      })
    )
}
