import type { Effect, Schema } from "effect"
import type { InjectionPlacement } from "../domain/InjectionPlacement.ts"
import type { PerRequestTrait } from "../domain/PerRequestTrait.ts"
import { InvalidChatRequest } from "../domain/requestErrors.ts"
import { firstIssue } from "../domain/schemaIssues.ts"
import type { ChatMessage } from "../providers/openai/chat.ts"
import type { ProviderApi } from "../providers/Provider.ts"
import type { MemoryFilter } from "../retrieval/memoryFilter.ts"
import type { GatewayResponse } from "./GatewayResponse.ts"
import type { ServiceOptions } from "./ServiceOptions.ts"

export type { ChatMessage }

/** The APIs whose requests go through the memory pipeline: OpenAI Chat Completions and Responses, Anthropic Messages. */
export type ProxiedApi = ProviderApi

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
  /** `service.memoryFilter`: only such memories are injected. */
  readonly memoryFilter: MemoryFilter | undefined
  /** `service.sharedMemories` (default true): the namespace's shared knowledge is injected where relevant. */
  readonly sharedMemories: boolean
  /** `X-Service-Traits` then `service.traits`; the body wins for a key declared in both. */
  readonly requestTraits: ReadonlyArray<PerRequestTrait>
  /** Found in the request; `resolveUser` plugins may still set or change it. */
  readonly userId: string | undefined
  /** The thread the gateway keeps for this conversation (`X-Service-Thread-Id`, else `service.threadId`). */
  readonly threadId: string | undefined
  /** A Responses request whose conversation state the gateway keeps (set by `parse`, per provider). */
  readonly gatewayResponse: GatewayResponse | undefined
  /** `service.injectionPlacement`: where this request's context goes (none: `INJECTION_PLACEMENT`). */
  readonly injectionPlacement: InjectionPlacement | undefined
}

/** A 400 `InvalidChatRequest` with this code and message. */
export const invalid = (code: string, message: string, param: string | null = null) =>
  new InvalidChatRequest({ code, message, param })

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
  /** The gateway keeps threads (`X-Service-Thread-Id`) of this API's conversations. */
  readonly threads: boolean
  /** The fields the pipeline needs, or the 400 of the first wrong one. */
  readonly read: (json: Record<string, unknown>) => Effect.Effect<Reading, InvalidChatRequest>
}
