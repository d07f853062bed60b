import { randomBytes } from "node:crypto"
import { Result } from "effect"
import type { ChatRequest } from "../apis/ChatRequest.ts"
import { type UnsupportedParameter, unsupported } from "../upstream/errors.ts"
import type { UpstreamProvider } from "../upstream/UpstreamConfig.ts"
import type { StoredResponse } from "./StoredResponses.ts"

/**
 * Who keeps a Responses conversation: the provider (`passthrough`: `previous_response_id`, `store`,
 * `conversation` forwarded untouched) or the gateway (`gateway`: it stores each response with its
 * input and rebuilds the conversation for `previous_response_id`). A request translated for a
 * provider without the Responses API is always the gateway's.
 */
export type ResponsesStateMode = "passthrough" | "gateway"

export const responsesStateFor = (provider: UpstreamProvider, configured: ResponsesStateMode): ResponsesStateMode =>
  provider === "openai" ? configured : "gateway"

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
export const withGatewayState = (request: ChatRequest): Result.Result<ChatRequest, UnsupportedParameter> => {
  const { previous_response_id: previous, store, conversation, background, ...body } = request.body
  if (conversation != null)
    return unsupported("conversation", "Conversations are not kept by this gateway yet: use previous_response_id")
  if (background === true)
    return unsupported("background", "Background responses need the provider to keep them: not with this upstream")
  if (previous != null && typeof previous !== "string")
    return unsupported("previous_response_id", "previous_response_id must be a string")
  return Result.succeed({
    ...request,
    body,
    gatewayResponse: {
      kept: { id: newResponseId(), previousResponseId: previous ?? null, store: store !== false },
      inputItems: inputItems(body["input"])
    }
  })
}

/** The body with the stored conversation before its own input: each earlier request's input, then its output. */
export const withHistory = (
  body: Readonly<Record<string, unknown>>,
  chain: ReadonlyArray<StoredResponse>
): Record<string, unknown> => ({
  ...body,
  input: [
    ...chain.flatMap((response) => [
      ...response.inputItems,
      ...(Array.isArray(response.response["output"]) ? response.response["output"] : [])
    ]),
    ...inputItems(body["input"])
  ]
})
