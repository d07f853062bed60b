import { Result } from "effect"
import { responsesAsChatRequest } from "../openai/responsesViaChat.ts"
import type { UnsupportedParameter } from "../upstream/errors.ts"
import { toAnthropicRequest } from "./toAnthropicRequest.ts"

/** The OpenAI APIs whose requests reach Anthropic translated (Messages requests go natively). */
export type TranslatedApi = "chat.completions" | "responses"

/**
 * An OpenAI request as the Anthropic Messages request it becomes, or the parameter it cannot carry.
 * The Responses API goes through its Chat Completions equivalent.
 */
export const anthropicRequestOf = (
  api: TranslatedApi,
  body: Readonly<Record<string, unknown>>
): Result.Result<Readonly<Record<string, unknown>>, UnsupportedParameter> =>
  api === "responses" ? Result.flatMap(responsesAsChatRequest(body), toAnthropicRequest) : toAnthropicRequest(body)
