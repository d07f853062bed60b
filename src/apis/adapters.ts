import type { ApiAdapter } from "./ApiAdapter.ts"
import type { ProxiedApi } from "./ChatRequest.ts"
import { chatCompletions } from "./chatCompletions.ts"
import { messages } from "./messages.ts"
import { responses } from "./responses.ts"

/** The adapter of each API the memory pipeline serves. */
export const adapters: Readonly<Record<ProxiedApi, ApiAdapter>> = {
  "chat.completions": chatCompletions,
  responses,
  messages
}
