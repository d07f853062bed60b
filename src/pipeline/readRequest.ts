import { Effect, Predicate, Schema } from "effect"
import { type ChatRequest, invalid, type RequestReader } from "../apis/ChatRequest.ts"
import { ThreadId } from "../apis/ServiceOptions.ts"
import { exceedsJsonDepth } from "../domain/jsonDepth.ts"
import { PerRequestTraits } from "../domain/PerRequestTrait.ts"
import { firstIssue } from "../domain/schemaIssues.ts"
import { decodeHeaderText } from "../domain/UserId.ts"
import { claimedUserId } from "../identity/userClaim.ts"

/** `MAX_JSON_DEPTH`'s default, for callers that give no depth. */
export const DEFAULT_MAX_JSON_DEPTH = 128

// Synchronous (an `Exit` is an effect that needs no fiber hop): this runs on every request.
const decodeHeaderTraits = Schema.decodeUnknownExit(Schema.fromJsonString(PerRequestTraits))

const isThreadId = Schema.is(ThreadId)

/**
 * The thread a chat completion continues: `X-Service-Thread-Id`, else `service.threadId`. Threads are
 * kept for chat completions only (the Responses API has its own state): elsewhere one is refused.
 */
const threadIdFrom = (reader: RequestReader, header: string | undefined, body: string | undefined) => {
  const threadId = header ?? body
  if (threadId === undefined) return Effect.succeed(undefined)
  if (!reader.threads) {
    return Effect.fail(
      invalid(
        "unsupported_parameter",
        "Threads are kept for /v1/chat/completions (the Responses API keeps its own state: previous_response_id)",
        header === undefined ? "service.threadId" : "X-Service-Thread-Id"
      )
    )
  }
  return isThreadId(threadId)
    ? Effect.succeed(threadId)
    : Effect.fail(
        invalid(
          "invalid_thread_id",
          "The thread id must be 1–200 printable ASCII characters, no spaces",
          "X-Service-Thread-Id"
        )
      )
}

/**
 * Reads and checks a request to one of the proxied APIs. Everything that can be refused is refused
 * here, before anything is stored or sent.
 */
export const parseChatRequest = Effect.fnUntraced(function* (
  reader: RequestReader,
  text: string,
  headers: Readonly<Record<string, string | undefined>>,
  limits: { readonly maxMessages: number; readonly maxJsonDepth?: number }
) {
  const json = yield* Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: () => invalid("invalid_json", "The request body is not valid JSON")
  })
  // Before anything walks the body: a value thousands deep overflows the stack of whatever does.
  const maxDepth = limits.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH
  if (exceedsJsonDepth(json, maxDepth)) {
    return yield* invalid(
      "json_too_deep",
      `The request body nests arrays and objects more than ${maxDepth} levels deep`
    )
  }
  if (!Predicate.isObject(json) || Array.isArray(json)) {
    return yield* invalid("invalid_request_body", "The request body must be a JSON object")
  }
  const fields = yield* reader.read(json)
  if (fields.messages.length > limits.maxMessages) {
    return yield* invalid("too_many_messages", `At most ${limits.maxMessages} messages are accepted`, "messages")
  }
  const headerTraits = headers["x-service-traits"]
  const fromHeader =
    headerTraits === undefined || headerTraits.trim() === ""
      ? []
      : yield* decodeHeaderTraits(decodeHeaderText(headerTraits)).pipe(
          Effect.mapError((error) => {
            const { message, path } = firstIssue(error)
            return invalid(
              "invalid_service_options",
              `Invalid X-Service-Traits header${path.length > 0 ? ` at ${path.join(".")}` : ""}: ${message}`,
              "X-Service-Traits"
            )
          })
        )
  const threadId = yield* threadIdFrom(reader, headers["x-service-thread-id"], fields.service?.threadId)
  const fromBody = fields.service?.traits ?? []
  const bodyKeys = new Set(fromBody.map((trait) => trait.key))
  const userId = yield* claimedUserId(headers, fields.userIds)

  const { service: _, ...body } = json as Record<string, unknown>
  return {
    api: reader.api,
    body,
    model: fields.model,
    messages: fields.messages,
    stream: fields.stream,
    includeUsage: fields.includeUsage,
    skipInjection: fields.service?.skipInjection === true,
    skipExtraction: fields.service?.skipExtraction === true,
    memoryFilter: fields.service?.memoryFilter,
    sharedMemories: fields.service?.sharedMemories !== false,
    requestTraits: [...fromHeader.filter((trait) => !bodyKeys.has(trait.key)), ...fromBody],
    userId,
    threadId,
    gatewayResponse: undefined,
    injectionPlacement: fields.service?.injectionPlacement
  } satisfies ChatRequest
})
