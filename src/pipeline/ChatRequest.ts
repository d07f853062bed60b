import { Effect, Predicate, Result, Schema } from "effect"
import type { ExternalIdConflict } from "../domain/errors.ts"
import { exceedsJsonDepth } from "../domain/jsonDepth.ts"
import { firstIssue } from "../domain/schemaIssues.ts"
import { decodeHeaderText, parseUserId } from "../domain/UserId.ts"
import type { ChatMessage, ServiceOptions } from "../openai/chat.ts"
import { type PerRequestTrait, PerRequestTraits } from "../traits/PerRequestTrait.ts"
import { InvalidChatRequest } from "./errors.ts"

export type { ChatMessage }

/** The APIs whose requests go through the memory pipeline: OpenAI Chat Completions and Responses, Anthropic Messages. */
export type ProxiedApi = "chat.completions" | "responses" | "messages"

/** A request through the memory pipeline, whichever API it came by. */
export interface ChatRequest {
  readonly api: ProxiedApi
  /** The caller's body without `service`: what goes to the provider (after injection). */
  readonly body: Readonly<Record<string, unknown>>
  readonly model: string
  /** The conversation as chat messages (converted for `messages` and `responses`: the input only). */
  readonly messages: ReadonlyArray<ChatMessage>
  readonly stream: boolean
  /** The caller asked for the usage chunk at the end of a stream. */
  readonly includeUsage: boolean
  readonly skipInjection: boolean
  readonly skipExtraction: boolean
  /** `X-Service-Traits` then `service.traits`; the body wins for a key declared in both. */
  readonly requestTraits: ReadonlyArray<PerRequestTrait>
  /** Found in the request; `resolveUser` plugins may still set or change it. */
  readonly userId: string | undefined
}

/** `MAX_JSON_DEPTH`'s default, for callers that give no depth. */
export const DEFAULT_MAX_JSON_DEPTH = 128

const invalid = (code: string, message: string, param: string | null = null) =>
  new InvalidChatRequest({ code, message, param })

// Synchronous (an `Exit` is an effect that needs no fiber hop): this runs on every request.
const decodeHeaderTraits = Schema.decodeUnknownExit(Schema.fromJsonString(PerRequestTraits))

/** A body's schema failure as the 400 the client gets: the field named by its path. */
export const describeIssue = (error: Schema.SchemaError): InvalidChatRequest => describe(error, "")

const describe = (error: Schema.SchemaError, root: string): InvalidChatRequest => {
  const { message, missing, path } = firstIssue(error)
  const param = [root, ...path].filter((part) => part !== "").join(".")
  if (root === "" && path[0] !== undefined && path[0] !== "service") {
    const field = path[0]
    return missing
      ? invalid(`missing_${field}`, `Missing required field '${param}'`, param)
      : invalid(`invalid_${field}`, `Invalid field '${param}': ${message}`, param)
  }
  return invalid("invalid_service_options", `Invalid ${param || "service options"}: ${message}`, param || null)
}

/**
 * A user id as the gateway accepts it, by the one user-id rule (src/domain/UserId.ts): the id
 * trimmed and in NFC, or 400 `invalid_user_id` (blank, too long, or with control, format, bidi or
 * separator characters). Also applied to the id a `resolveUser` plugin returns.
 */
export const checkUserId = (value: string, source: string): Effect.Effect<string, InvalidChatRequest> =>
  Result.match(parseUserId(value), {
    onSuccess: Effect.succeed,
    onFailure: (problem) => Effect.fail(invalid("invalid_user_id", `${source} ${problem}`, source))
  })

/**
 * The user id by precedence: header `X-Service-Id`, then the body's sources in order (chat and
 * responses: `safety_identifier`, `user`, `metadata.profile_id`; messages: `metadata.user_id`). The first
 * source present decides: a blank or invalid one is refused, never skipped for the next.
 */
const userIdFrom = (
  header: string | undefined,
  sources: ReadonlyArray<readonly [string, unknown]>
): Effect.Effect<string | undefined, InvalidChatRequest> => {
  const candidates: ReadonlyArray<readonly [string, unknown]> = [
    ["X-Service-Id", header === undefined ? undefined : decodeHeaderText(header)],
    ...sources
  ]
  for (const [source, value] of candidates) {
    if (value === undefined || value === null) continue
    if (!Predicate.isString(value)) return Effect.fail(invalid("invalid_user_id", `${source} must be a string`, source))
    return checkUserId(value, source)
  }
  return Effect.succeed(undefined)
}

/** What the pipeline reads of a body, whichever API it follows. */
export interface Reading {
  readonly model: string
  readonly messages: ReadonlyArray<ChatMessage>
  readonly stream: boolean
  readonly includeUsage: boolean
  readonly service: ServiceOptions | undefined
  /** The body's user id sources, in order of precedence. */
  readonly userIds: ReadonlyArray<readonly [string, unknown]>
}

/** How one API's requests are read (its adapter, `src/apis/`). */
export interface RequestReader {
  readonly api: ProxiedApi
  /** The fields the pipeline needs, or the 400 of the first wrong one. */
  readonly read: (json: Record<string, unknown>) => Effect.Effect<Reading, InvalidChatRequest>
}

/** A user id that is another profile's internal id: refused when its profile would be created. */
export const takenUserId = (conflict: ExternalIdConflict): InvalidChatRequest =>
  invalid(
    "invalid_user_id",
    `The user id '${conflict.externalId}' is the internal id of another profile; use another id`
  )

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
  const fromBody = fields.service?.traits ?? []
  const bodyKeys = new Set(fromBody.map((trait) => trait.key))
  const userId = yield* userIdFrom(headers["x-service-id"], fields.userIds)

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
    requestTraits: [...fromHeader.filter((trait) => !bodyKeys.has(trait.key)), ...fromBody],
    userId
  } satisfies ChatRequest
})
