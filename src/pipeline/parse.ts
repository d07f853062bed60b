import { Effect, Result } from "effect"
import { adapters } from "../apis/adapters.ts"
import type { ProxiedApi } from "../apis/ChatRequest.ts"
import { responsesStateFor, withGatewayState } from "../apis/responsesState.ts"
import { InvalidChatRequest } from "../domain/requestErrors.ts"
import { ServerConfig } from "../http/ServerConfig.ts"
import { TraitSchema } from "../traits/TraitSchema.ts"
import { UpstreamConfig } from "../upstream/UpstreamConfig.ts"
import { parseChatRequest } from "./readRequest.ts"
import { selectUpstream } from "./selectUpstream.ts"

export interface CompletionInput {
  /** Which API the client called: its request and answer formats. */
  readonly api: ProxiedApi
  /** The raw request body. */
  readonly text: string
  /** Request headers, lower-cased names. */
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly requestId: string
}

/**
 * Stage 0: the request read by its API's adapter, its trait declarations, the provider it goes to
 * and the body that provider gets (translated here, once, when the provider speaks another API).
 * Everything that can be refused is refused here, before anything is stored or sent.
 */
export const makeParse = Effect.gen(function* () {
  const server = yield* ServerConfig
  const traitSchema = yield* TraitSchema
  const upstreams = yield* UpstreamConfig
  return Effect.fnUntraced(function* (input: CompletionInput) {
    const adapter = adapters[input.api]
    const parsed = yield* parseChatRequest(adapter, input.text, input.headers, server)
    const definitions = yield* Result.match(traitSchema.withRequestTraits(parsed.requestTraits), {
      onFailure: (problem) =>
        Effect.fail(
          new InvalidChatRequest({
            code: "invalid_service_options",
            message: `Invalid trait declaration: ${problem}`,
            param: "service.traits"
          })
        ),
      onSuccess: Effect.succeed
    })
    const target = yield* selectUpstream(input.headers, upstreams, adapter.nativeProvider)
    const stateful =
      adapter.responsesState && responsesStateFor(target.provider, upstreams.responsesState) === "gateway"
    const prepared = stateful ? yield* Effect.fromResult(withGatewayState(parsed)) : parsed
    const outbound = yield* Effect.fromResult(adapter.outbound(prepared, target.provider))
    return { adapter, request: prepared, definitions, target, outbound }
  })
})
