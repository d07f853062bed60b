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

const byPath = Object.values(adapters)

/** The adapter whose route is `path` or a path below it (`/v1/messages/batches`: Messages), if any. */
export const adapterAt = (path: string): ApiAdapter | undefined =>
  byPath.find((adapter) => path === adapter.path || path.startsWith(`${adapter.path}/`))
