import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { messageText } from "../domain/messageText.ts"
import type { MemoryWork } from "../domain/Usage.ts"
import { redactSecrets } from "../providers/errors.ts"
import { ChatCompletion } from "../providers/openai/chat.ts"
import { chatCompletionsUsage } from "../providers/openai/usage.ts"
import { readAnswerBody } from "../providers/usage.ts"
import { UpstreamHttp } from "../upstream/UpstreamHttp.ts"
import { UsageRecorder } from "../usage/UsageRecorder.ts"
import { ExtractionConfig } from "./ExtractionConfig.ts"

/** The extraction model could not be asked, or did not answer: the job is retried. */
export class ExtractionCallFailed extends Schema.TaggedError<ExtractionCallFailed>()("ExtractionCallFailed", {
  message: Schema.String
}) {}

/** A part of a user message to the extraction model, in Chat Completions' format. */
export type ModelPart =
  | { readonly type: "text"; readonly text: string }
  /** A data URL (`data:image/png;base64,…`) or the URL the user gave: never fetched by the gateway. */
  | { readonly type: "image_url"; readonly image_url: { readonly url: string } }
  /** A PDF as a data URL. */
  | { readonly type: "file"; readonly file: { readonly filename: string; readonly file_data: string } }

export interface ModelMessage {
  readonly role: "system" | "user"
  readonly content: string | ReadonlyArray<ModelPart>
}

const parseJson = Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.Unknown))
const decodeCompletion = Schema.decodeUnknownEffect(ChatCompletion)

/**
 * The OpenAI-compatible chat model that reads turns and writes summaries
 * (`EXTRACTION_BASE_URL`, `EXTRACTION_MODEL`, `EXTRACTION_API_KEY`). It always asks for a JSON object.
 */
export class ExtractionModel extends Context.Service<
  ExtractionModel,
  {
    /** `false` when no key is configured: jobs then wait in the queue. */
    readonly available: boolean
    /**
     * The reply's text; its tokens are recorded as `work` for the profile whose job runs
     * (`UsageAttribution`). `apiKey`: a tenant's provider key to call with instead of the operator's
     * (`ExtractionCredentials`).
     */
    readonly complete: (
      messages: ReadonlyArray<ModelMessage>,
      options: { readonly work: MemoryWork; readonly apiKey?: Redacted.Redacted<string> | undefined }
    ) => Effect.Effect<string, ExtractionCallFailed>
  }
>()("gateway/extraction/ExtractionModel") {
  static readonly layer = Layer.effect(
    ExtractionModel,
    Effect.gen(function* () {
      const config = yield* ExtractionConfig
      const http = yield* UpstreamHttp
      const recorder = yield* UsageRecorder
      if (Option.isNone(config.apiKey)) {
        return ExtractionModel.of({
          available: false,
          complete: () =>
            Effect.fail(new ExtractionCallFailed({ message: "no EXTRACTION_API_KEY or UPSTREAM_API_KEY configured" }))
        })
      }
      const operatorKey = Redacted.value(config.apiKey.value)

      const complete = Effect.fn("ExtractionModel.complete")(function* (
        messages: ReadonlyArray<ModelMessage>,
        { apiKey, work }: { readonly work: MemoryWork; readonly apiKey?: Redacted.Redacted<string> | undefined }
      ) {
        const key = apiKey === undefined ? operatorKey : Redacted.value(apiKey)
        // The job's error is shown to operators: neither key is ever in it.
        const failed = (message: string) =>
          new ExtractionCallFailed({ message: redactSecrets(message, [key, operatorKey]) })
        const body = { model: config.model, messages, temperature: 0, response_format: { type: "json_object" } }
        const text = yield* http
          .postJson(`${config.baseUrl}/chat/completions`, { authorization: `Bearer ${key}` }, body)
          .pipe(
            Effect.timeoutOrElse({
              duration: config.timeoutMs,
              orElse: () => Effect.fail(failed(`the extraction model did not answer within ${config.timeoutMs} ms`))
            }),
            Effect.catchTags({
              UpstreamTimeout: (error) => Effect.fail(failed(`the extraction model: ${error.message}`)),
              UpstreamUnreachable: (error) => Effect.fail(failed(`the extraction model: ${error.message}`))
            }),
            Effect.flatMap(({ status, text }) =>
              status >= 200 && status < 300
                ? Effect.succeed(text)
                : Effect.fail(failed(`the extraction model answered ${status}: ${text.slice(0, 300)}`))
            )
          )
        const json = yield* parseJson(text).pipe(
          Effect.mapError(() => failed("the extraction model sent a malformed chat completion"))
        )
        const reply = yield* decodeCompletion(json).pipe(
          Effect.mapError(() => failed("the extraction model sent a malformed chat completion"))
        )
        yield* recorder.record({
          work,
          namespace: undefined,
          keyId: undefined,
          userId: undefined,
          profileId: undefined,
          provider: "openai",
          api: "chat.completions",
          model: config.model,
          usage: readAnswerBody(chatCompletionsUsage, json).usage,
          injected: 0
        })
        const first = reply.choices[0]
        if (first === undefined) return yield* failed("the extraction model sent a chat completion without choices")
        return messageText(first.message.content)
      })

      return ExtractionModel.of({ available: true, complete })
    })
  ).pipe(Layer.provide([UpstreamHttp.layer, UsageRecorder.layer]))
}
