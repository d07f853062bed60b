import { Context, Effect, Layer, Option, Predicate, Redacted, Schema } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { AppConfig } from "../config/AppConfig.ts"
import { redactSecrets } from "../upstream/errors.ts"

/** The extraction model could not be asked, or did not answer: the job is retried. */
export class ExtractionCallFailed extends Schema.TaggedError<ExtractionCallFailed>()("ExtractionCallFailed", {
  message: Schema.String
}) {}

export interface ModelMessage {
  readonly role: "system" | "user"
  readonly content: string
}

const Reply = Schema.Struct({
  choices: Schema.Array(Schema.Struct({ message: Schema.Struct({ content: Schema.NullOr(Schema.String) }) }))
    .check(Schema.isMinLength(1))
})

/**
 * The OpenAI-compatible chat model that reads turns and writes summaries
 * (`EXTRACTION_BASE_URL`, `EXTRACTION_MODEL`, `EXTRACTION_API_KEY`). It always asks for a JSON object.
 */
export class ExtractionModel extends Context.Service<ExtractionModel, {
  /** `false` when no key is configured: jobs then wait in the queue. */
  readonly available: boolean
  readonly complete: (messages: ReadonlyArray<ModelMessage>) => Effect.Effect<string, ExtractionCallFailed>
}>()("gateway/extraction/ExtractionModel") {
  static readonly layer = Layer.effect(
    ExtractionModel,
    Effect.gen(function*() {
      const config = (yield* AppConfig).extraction
      const client = yield* HttpClient.HttpClient
      if (Option.isNone(config.apiKey)) {
        return ExtractionModel.of({
          available: false,
          complete: () => Effect.fail(new ExtractionCallFailed({ message: "no EXTRACTION_API_KEY or UPSTREAM_API_KEY configured" }))
        })
      }
      const key = Redacted.value(config.apiKey.value)
      const failed = (message: string) => new ExtractionCallFailed({ message: redactSecrets(message, [key]) })

      const complete = Effect.fn("ExtractionModel.complete")(function*(messages: ReadonlyArray<ModelMessage>) {
        const request = HttpClientRequest.post(`${config.baseUrl}/chat/completions`).pipe(
          HttpClientRequest.setHeaders({ authorization: `Bearer ${key}`, "accept-encoding": "identity" }),
          HttpClientRequest.bodyText(
            JSON.stringify({ model: config.model, messages, temperature: 0, response_format: { type: "json_object" } }),
            "application/json"
          )
        )
        const text = yield* Effect.gen(function*() {
          const response = yield* client.execute(request)
          const body = yield* response.text
          if (response.status < 200 || response.status >= 300) {
            return yield* failed(`the extraction model answered ${response.status}: ${body.slice(0, 300)}`)
          }
          return body
        }).pipe(
          Effect.provideService(HttpClient.TracerPropagationEnabled, false),
          Effect.timeoutOrElse({
            duration: config.timeoutMs,
            orElse: () => Effect.fail(failed(`the extraction model did not answer within ${config.timeoutMs} ms`))
          }),
          Effect.catchTag("HttpClientError", (error) => Effect.fail(failed(`cannot reach the extraction model: ${error.reason._tag}`)))
        )
        const reply = yield* Schema.decodeUnknownEffect(Schema.fromJsonString(Reply))(text).pipe(
          Effect.mapError(() => failed("the extraction model sent a malformed chat completion"))
        )
        const content = reply.choices[0]!.message.content
        return Predicate.isString(content) ? content : ""
      })

      return ExtractionModel.of({ available: true, complete })
    })
  )
}
