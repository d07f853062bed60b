import type { ChatCompletionChunk, ToolCall } from "./chat.ts"
import type { StreamEvent } from "./stream.ts"

/** The first choice's assistant message: what the turn records. */
export interface AssembledReply {
  /** The provider's id of the answer (`chatcmpl-…`, `resp_…`, `msg_…`), when it gave one. */
  readonly answerId?: string | undefined
  readonly content: string
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly finishReason: string | null
}

/**
 * Rebuilds the first choice's assistant message from the events of a stream, as they are relayed.
 */
export const makeStreamAssembler = () => {
  let content = ""
  let finishReason: string | null = null
  let done = false
  let answerId: string | undefined
  const toolCalls: Array<{ id: string; type: string; function: { name: string; arguments: string } }> = []

  const onChunk = (chunk: ChatCompletionChunk) => {
    answerId ??= chunk.id
    for (const choice of chunk.choices) {
      if ((choice.index ?? 0) !== 0) continue
      const delta = choice.delta
      if (typeof delta?.content === "string") content += delta.content
      for (const call of delta?.tool_calls ?? []) {
        const entry = (toolCalls[call.index ?? toolCalls.length] ??= {
          id: "",
          type: "function",
          function: { name: "", arguments: "" }
        })
        if (typeof call.id === "string") entry.id = call.id
        if (typeof call.type === "string") entry.type = call.type
        entry.function.name += call.function?.name ?? ""
        entry.function.arguments += call.function?.arguments ?? ""
      }
      if (typeof choice.finish_reason === "string") finishReason = choice.finish_reason
    }
  }

  return {
    add: (event: StreamEvent) => {
      if (event._tag === "Done") done = true
      else onChunk(event.chunk)
    },
    /** The stream ended the way a finished answer does (`[DONE]` or a finish reason). */
    isComplete: () => done || finishReason !== null,
    /** Some of the answer (text, a tool call, or its id) has arrived. */
    started: () => content !== "" || toolCalls.length > 0 || answerId !== undefined,
    reply: (): AssembledReply => ({ answerId, content, toolCalls: toolCalls.filter(Boolean), finishReason })
  }
}
