import type { Provider } from "../Provider.ts"
import { chatCompletionsUsage, responsesUsage } from "./usage.ts"

/** OpenAI (and any server of its API): Chat Completions and Responses natively, a bearer key. */
export const openai: Provider = {
  name: "openai",
  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  clientHeaders: ["openai-organization", "openai-project", "openai-beta"],
  // Its SDKs send nothing of their own: a client is OpenAI's unless it says otherwise.
  isOwnClient: () => false,
  errorFormat: "openai",
  unreadableError: (message) => ({ error: { message, type: "upstream_error", param: null, code: "upstream_error" } }),
  usage: { "/chat/completions": chatCompletionsUsage, "/responses": responsesUsage },
  // Already in the format clients read.
  modelList: undefined,
  chat: undefined,
  capabilities: { responses: true, promptCache: "key" }
}
