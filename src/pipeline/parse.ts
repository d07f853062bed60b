import { Effect, Result } from "effect"
import type { Outbound } from "../apis/ApiAdapter.ts"
import { adapters } from "../apis/adapters.ts"
import type { ChatRequest, ProxiedApi } from "../apis/ChatRequest.ts"
import { responsesStateFor, withGatewayState } from "../apis/responsesState.ts"
import { InvalidChatRequest } from "../domain/requestErrors.ts"
import { ServerConfig } from "../http/ServerConfig.ts"
import { Routes } from "../routing/Routes.ts"
import type { Candidate } from "../routing/UpstreamRouter.ts"
import { UpstreamRouter } from "../routing/UpstreamRouter.ts"
import { TraitSchema } from "../traits/TraitSchema.ts"
import { UpstreamConfig } from "../upstream/UpstreamConfig.ts"
import { parseChatRequest } from "./readRequest.ts"
import { selectRouted, selectUpstream } from "./selectUpstream.ts"

export interface CompletionInput {
  /** Which API the client called: its request and answer formats. */
  readonly api: ProxiedApi
  /** The raw request body. */
  readonly text: string
  /** Request headers, lower-cased names. */
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly requestId: string
}

/** The request as a routed target gets it: asking for the target's model. */
export const askedOf = (request: ChatRequest, candidate: Candidate): ChatRequest =>
  candidate.model === undefined ? request : { ...request, body: { ...request.body, model: candidate.model } }

/**
 * Stage 0: the request read by its API's adapter, its trait declarations, where it may be served
 * (the provider it names, or its model's route: `ROUTES_FILE`) and the body the first of those gets
 * (translated here, once, when that provider speaks another API; the others' when they serve).
 * Everything that can be refused is refused here, before anything is stored or sent.
 */
export const makeParse = Effect.gen(function* () {
  const server = yield* ServerConfig
  const traitSchema = yield* TraitSchema
  const upstreams = yield* UpstreamConfig
  const routes = yield* Routes
  const router = yield* UpstreamRouter
  return Effect.fnUntraced(function* (input: CompletionInput) {
    const adapter = adapters[input.api]
    const parsed = yield* parseChatRequest(adapter, input.text, input.headers, server)
    // The declarations, checked here (a 400 before anything else); merged over the namespace's schema once it is known.
    yield* Result.match(traitSchema.withRequestTraits(parsed.requestTraits), {
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
    const route = routes.find(parsed.model)
    const routed =
      route === undefined
        ? [router.direct(yield* selectUpstream(input.headers, upstreams, adapter.nativeProvider))]
        : yield* selectRouted(router, route, input.headers, upstreams, adapter.nativeProvider)
    const first = routed[0]!
    // Who keeps a Responses conversation is the first target's matter; a target that would keep it otherwise is passed by.
    const stateOf = (candidate: Candidate) =>
      adapter.responsesState ? responsesStateFor(candidate.target.provider, upstreams.responsesState) : "passthrough"
    const candidates = routed.filter((candidate) => stateOf(candidate) === stateOf(first))
    const prepared = stateOf(first) === "gateway" ? yield* Effect.fromResult(withGatewayState(parsed)) : parsed
    // The first target's body; one it cannot carry is refused unless another target may.
    const outbound = adapter.outbound(askedOf(prepared, first), first.target.provider)
    if (Result.isFailure(outbound) && candidates.length === 1) return yield* Effect.fail(outbound.failure)
    return {
      adapter,
      request: prepared,
      candidates,
      firstOutbound: Result.getOrUndefined(outbound) satisfies Outbound | undefined
    }
  })
})
