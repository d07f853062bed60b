import { Schema } from "effect"
import { InjectionPlacement } from "../domain/InjectionPlacement.ts"
import { PerRequestTraits } from "../domain/PerRequestTrait.ts"
import { MessagesRequest as MessagesFields } from "../providers/anthropic/messagesRequest.ts"
import { ChatCompletionRequest as ChatCompletionFields } from "../providers/openai/chat.ts"
import { ResponsesRequest as ResponsesFields } from "../providers/openai/responses.ts"
import { MemoryFilter } from "../retrieval/memoryFilter.ts"

/** A thread's id: printable, 1–200 characters. */
export const ThreadId = Schema.String.check(
  Schema.makeFilter((id: string) => /^[\x21-\x7e]{1,200}$/.test(id), {
    expected: "1–200 printable ASCII characters, no spaces"
  })
)

/** The gateway's own options in a request body; removed before the body is forwarded. */
export const ServiceOptions = Schema.Struct({
  traits: Schema.optionalKey(PerRequestTraits),
  skipInjection: Schema.optionalKey(Schema.Boolean),
  skipExtraction: Schema.optionalKey(Schema.Boolean),
  /** Only memories with these tags and metadata are injected (e.g. an app keeping work and personal apart). */
  memoryFilter: Schema.optionalKey(MemoryFilter),
  /** `false` leaves out the app's shared knowledge (its namespace's shared memories); injected where relevant by default. */
  sharedMemories: Schema.optionalKey(Schema.Boolean),
  /** The thread the gateway keeps for this conversation (as `X-Service-Thread-Id`): its history is restored. */
  threadId: Schema.optionalKey(ThreadId),
  /** Where this request's context goes (`INJECTION_PLACEMENT` otherwise). */
  injectionPlacement: Schema.optionalKey(InjectionPlacement)
})
export type ServiceOptions = typeof ServiceOptions.Type

// Each API's request as the gateway reads it: the provider's fields (`providers/`) and the gateway's `service`.
const service = Schema.optionalKey(ServiceOptions)

/** The fields of `POST /v1/chat/completions` the gateway reads. */
export const ChatCompletionRequest = Schema.Struct({ ...ChatCompletionFields.fields, service })

/** The fields of `POST /v1/responses` the gateway reads. */
export const ResponsesRequest = Schema.Struct({ ...ResponsesFields.fields, service })

/** The fields of `POST /v1/messages` the gateway reads. */
export const MessagesRequest = Schema.Struct({ ...MessagesFields.fields, service })
