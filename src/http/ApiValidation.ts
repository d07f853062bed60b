import { Effect, String as Str } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import type { HttpApiError } from "effect/http-api"
import { firstIssue } from "../domain/schemaIssues.ts"
import { BadRequest, InternalServerError, PayloadTooLarge, Unauthorized } from "./OpenAiError.ts"

/**
 * Turns request-decoding failures of the management API into OpenAI-shaped 400s whose code and
 * message name the offending field (`missing_value`, `invalid_limit`, `invalid_json`, …).
 *
 * Its declared errors also document, for every endpoint, the failures raised before the API is
 * reached (401 auth and 413 body limit come from the server middleware; 500 from any defect).
 */
export class ApiValidation extends HttpApiMiddleware.Service<ApiValidation>()("gateway/http/ApiValidation", {
  error: [BadRequest, Unauthorized, PayloadTooLarge, InternalServerError]
}) {}

const slotNames = { Params: "path parameter", Query: "query parameter", Headers: "header", Payload: "field" } as const

export const toBadRequest = (error: HttpApiError.HttpApiSchemaError): BadRequest => {
  const { message, missing, path } = firstIssue(error.cause)
  if (error.kind === "Payload" && path.length === 0) {
    return message === "Expected a valid JSON body"
      ? BadRequest.of("invalid_json", "The request body is not valid JSON")
      : BadRequest.of("invalid_request_body", `The request body is invalid: ${message}`)
  }
  const param = path.join(".")
  const field = Str.camelToSnake(path[0] ?? "request")
  const slot = error.kind === "Body" || error.kind === "ResponseHeaders" ? "field" : slotNames[error.kind]
  return missing
    ? BadRequest.of(`missing_${field}`, `Missing required ${slot} '${param}'`, param)
    : BadRequest.of(`invalid_${field}`, `Invalid ${slot} '${param}': ${message}`, param)
}

export const ApiValidationLive = HttpApiMiddleware.layerSchemaErrorTransform(ApiValidation, (error) =>
  // A response that fails to encode is our bug, not the caller's: let it become a logged 500.
  error.kind === "Body" || error.kind === "ResponseHeaders"
    ? Effect.die(error)
    : Effect.fail(toBadRequest(error)))
