import { randomBytes } from "node:crypto"
import { Predicate, Result } from "effect"
import type { InvalidChatRequest } from "../domain/requestErrors.ts"
import { type UnsupportedParameter, unsupported } from "../providers/errors.ts"
import type { ProviderName } from "../providers/ProviderName.ts"
import { providerOf } from "../providers/providers.ts"
import type { StoredResponse } from "../responses/StoredResponsesRepo.ts"
import { itemIdProblem, stateIdProblem } from "../responses/stateIds.ts"
import { type ChatRequest, invalid } from "./ChatRequest.ts"

/**
 * Who keeps a Responses conversation: the provider (`passthrough`: `previous_response_id`, `store`,
 * `conversation` forwarded untouched) or the gateway (`gateway`: it stores each response with its
 * input and rebuilds the conversation for `previous_response_id`). A request translated for a
 * provider without the Responses API is always the gateway's.
 */
export type ResponsesStateMode = "passthrough" | "gateway"

export const responsesStateFor = (provider: ProviderName, configured: ResponsesStateMode): ResponsesStateMode =>
  providerOf(provider).capabilities.responses ? configured : "gateway"

/** A response id like the provider's: `resp_` and 48 hex digits, unguessable. */
const newResponseId = () => `resp_${randomBytes(24).toString("hex")}`

/** The input as items (a string is one user message). */
export const inputItems = (input: unknown): ReadonlyArray<unknown> =>
  typeof input === "string" ? [{ type: "message", role: "user", content: input }] : Array.isArray(input) ? input : []

/**
 * The request as the gateway keeps its state: the state fields taken out of the body (the provider
 * gets none: it keeps nothing), what they asked for in `gatewayResponse`. `store` defaults to true,
 * as OpenAI's does.
 */
export const withGatewayState = (
  request: ChatRequest
): Result.Result<ChatRequest, UnsupportedParameter | InvalidChatRequest> => {
  const { previous_response_id: previous, store, conversation, background, ...body } = request.body
  if (background === true)
    return unsupported("background", "Background responses need the provider to keep them: not with this upstream")
  if (previous != null && typeof previous !== "string")
    return Result.fail(
      invalid("invalid_previous_response_id", "previous_response_id must be a string", "previous_response_id")
    )
  const conversationId =
    typeof conversation === "string"
      ? conversation
      : Predicate.isObject(conversation) && typeof conversation["id"] === "string"
        ? conversation["id"]
        : undefined
  if (conversation != null && conversationId === undefined)
    return Result.fail(invalid("invalid_conversation", "conversation must be an id or {id}", "conversation"))
  if (previous != null && conversationId !== undefined)
    return Result.fail(
      invalid("conflicting_parameters", "previous_response_id and conversation cannot be used together", "conversation")
    )
  const badId =
    previous != null
      ? idRefusal(previous, "invalid_previous_response_id", "previous_response_id")
      : conversationId !== undefined
        ? (idRefusal(conversationId, "invalid_conversation", "conversation") ?? itemIdRefusal(body["input"]))
        : undefined
  if (badId !== undefined) return Result.fail(badId)
  return Result.succeed({
    ...request,
    body,
    gatewayResponse: {
      kept: {
        id: newResponseId(),
        previousResponseId: previous ?? null,
        conversationId: conversationId ?? null,
        store: store !== false
      },
      inputItems: inputItems(body["input"])
    }
  })
}

/** The 400 for an id of kept state that cannot be one (empty, too long, control characters), if it is one. */
const idRefusal = (id: string, code: string, param: string): InvalidChatRequest | undefined => {
  const problem = stateIdProblem(id)
  return problem === undefined ? undefined : invalid(code, `${param} ${problem}`, param)
}

/** The 400 for an input item whose own id could not be kept in its conversation, if there is one. */
const itemIdRefusal = (input: unknown): InvalidChatRequest | undefined => {
  for (const [index, item] of inputItems(input).entries()) {
    const problem = Predicate.isObject(item) ? itemIdProblem(item["id"]) : undefined
    if (problem !== undefined) return invalid("invalid_item_id", `input[${index}].id ${problem}`, `input[${index}].id`)
  }
  return undefined
}

/** Whether the request continues a conversation the gateway keeps (a previous response, or a conversation). */
export const continuesConversation = (request: ChatRequest) =>
  request.gatewayResponse !== undefined &&
  (request.gatewayResponse.kept.previousResponseId !== null || request.gatewayResponse.kept.conversationId !== null)

/** A stored response's items in conversation order: its request's input, then its output. */
export const itemsOfResponse = (response: Pick<StoredResponse, "inputItems" | "response">): ReadonlyArray<unknown> => [
  ...response.inputItems,
  ...outputItems(response.response)
]

/** A response object's output items. */
export const outputItems = (response: Readonly<Record<string, unknown>>): ReadonlyArray<unknown> =>
  Array.isArray(response["output"]) ? response["output"] : []

/** The body with the earlier items of its conversation before its own input. */
export const withHistory = (
  body: Readonly<Record<string, unknown>>,
  history: ReadonlyArray<unknown>
): Record<string, unknown> => ({ ...body, input: [...history, ...inputItems(body["input"])] })
