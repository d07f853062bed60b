import { Effect, Exit, Layer, String as Str } from "effect"
import { HttpMethod, HttpServerRequest } from "effect/http"
import { HttpApiError, HttpApiMiddleware } from "effect/http-api"
import { exceedsJsonDepth } from "../domain/jsonDepth.ts"
import { firstIssue } from "../domain/schemaIssues.ts"
import { BadRequest, InternalServerError, PayloadTooLarge, Unauthorized } from "./OpenAiError.ts"
import { ServerConfig } from "./ServerConfig.ts"

/**
 * Checks what the framework does not before it decodes a management API request (JSON nested
 * deeper than `MAX_JSON_DEPTH`), and turns request-decoding failures into OpenAI-shaped 400s
 * whose code and message name the offending field (`missing_value`, `invalid_limit`, `invalid_json`, …).
 *
 * Its declared errors also document, for every endpoint, the failures raised before the API is
 * reached (401 auth and 413 body limit come from the server middleware; 500 from any defect).
 */
export class ApiValidation extends HttpApiMiddleware.Service<ApiValidation>()("gateway/http/ApiValidation", {
  error: [BadRequest, Unauthorized, PayloadTooLarge, InternalServerError]
}) {}

const slotNames = { Params: "path parameter", Query: "query parameter", Headers: "header", Payload: "field" } as const

/** Codes of path parameters whose name alone would be vague. */
const parameterCodes: Readonly<Record<string, string>> = { id: "profile_id" }

/** Caller-supplied text echoed in a message is cut to this many characters. */
const MAX_ECHOED_CHARACTERS = 300

const shorten = (message: string) =>
  message.length <= MAX_ECHOED_CHARACTERS ? message : `${message.slice(0, MAX_ECHOED_CHARACTERS).toWellFormed()}…`

export const toBadRequest = (error: HttpApiError.HttpApiSchemaError): BadRequest => {
  const { message, missing, path } = firstIssue(error.cause)
  if (error.kind === "Payload" && path.length === 0) {
    return message === "Expected a valid JSON body"
      ? BadRequest.of("invalid_json", "The request body is not valid JSON")
      : BadRequest.of("invalid_request_body", `The request body is invalid: ${shorten(message)}`)
  }
  const param = path.join(".")
  const name = path[0] ?? "request"
  const field = (error.kind === "Params" ? parameterCodes[name] : undefined) ?? Str.camelToSnake(name)
  const slot = error.kind === "Body" || error.kind === "ResponseHeaders" ? "field" : slotNames[error.kind]
  return missing
    ? BadRequest.of(`missing_${field}`, `Missing required ${slot} '${param}'`, param)
    : BadRequest.of(`invalid_${field}`, `Invalid ${slot} '${param}': ${shorten(message)}`, param)
}

/** Refuses a JSON body nested deeper than `maxDepth` before anything walks it (and overflows the stack). */
const checkDepth = Effect.fnUntraced(function* (maxDepth: number) {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (!HttpMethod.hasBody(request.method)) return
  // The body is read once and cached: decoding reads the same text (and reports a read failure itself).
  const text = yield* Effect.exit(request.text)
  if (Exit.isFailure(text) || text.value.length <= maxDepth) return
  let json: unknown
  try {
    json = JSON.parse(text.value)
  } catch {
    return // decoding answers invalid_json
  }
  if (exceedsJsonDepth(json, maxDepth)) {
    return yield* BadRequest.of(
      "json_too_deep",
      `The request body nests arrays and objects more than ${maxDepth} levels deep`
    )
  }
})

export const ApiValidationLive = Layer.effect(
  ApiValidation,
  Effect.gen(function* () {
    const { maxJsonDepth } = yield* ServerConfig
    return ApiValidation.of((httpEffect, { endpoint }) =>
      (endpoint.payload.size > 0 ? Effect.andThen(checkDepth(maxJsonDepth), httpEffect) : httpEffect).pipe(
        Effect.catch((error) =>
          HttpApiError.HttpApiSchemaError.is(error)
            ? // A response that fails to encode is our bug, not the caller's: let it become a logged 500.
              error.kind === "Body" || error.kind === "ResponseHeaders"
              ? Effect.die(error)
              : Effect.fail(toBadRequest(error))
            : Effect.fail(error)
        )
      )
    )
  })
)
