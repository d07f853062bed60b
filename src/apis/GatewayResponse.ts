import type { KeptResponse } from "../providers/openai/responsesFromChat.ts"

/** A Responses request whose state the gateway keeps: the response it will keep, and this request's own input. */
export interface GatewayResponse {
  readonly kept: KeptResponse
  readonly inputItems: ReadonlyArray<unknown>
}
