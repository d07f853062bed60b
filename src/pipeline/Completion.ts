import { Context, Effect, Exit, Layer, Result, Stream } from "effect"
import * as Sse from "effect/encoding/Sse"
import { Background } from "../background/Background.ts"
import { AppConfig } from "../config/AppConfig.ts"
import { ContextStore } from "../store/ContextStore.ts"
import { ProfileStore } from "../store/ProfileStore.ts"
import { TurnStore } from "../store/TurnStore.ts"
import { TraitSchema } from "../traits/TraitSchema.ts"
import type { UpstreamFailure, UpstreamStreamError } from "../upstream/errors.ts"
import { Upstream, type UpstreamReply } from "../upstream/Upstream.ts"
import { checkUserId, parseChatRequest } from "./ChatRequest.ts"
import { InvalidChatRequest, type MissingUpstreamKey, MissingUserId } from "./errors.ts"
import type { PluginRejection } from "../plugins/Plugin.ts"
import { type PluginFailed, PluginHost } from "../plugins/PluginHost.ts"
import { inject, type InjectionReceipt } from "./inject.ts"
import { recordTurn, replyOfCompletion } from "./record.ts"
import { forwardedHeaders, selectUpstream } from "./selectUpstream.ts"
import { type AssembledReply, makeStreamAssembler } from "./StreamAssembler.ts"

export const CONTEXT_HEADER = "x-service-context"

export type CompletionFailure =
  | InvalidChatRequest
  | MissingUserId
  | MissingUpstreamKey
  | UpstreamFailure
  | PluginRejection
  | PluginFailed

export interface CompletionInput {
  /** The raw request body. */
  readonly text: string
  /** Request headers, lower-cased names. */
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly requestId: string
}

const encoder = new TextEncoder()

/** The in-band end of a stream that failed after it started: an SSE `error` event, then nothing. */
const errorEvent = (error: UpstreamStreamError) =>
  encoder.encode(
    Sse.encoder.write({
      _tag: "Event",
      event: "error",
      id: undefined,
      data: JSON.stringify({ error: { message: error.message, type: "upstream_error", code: error.code, param: null } })
    })
  )

const receiptHeader = (profileId: string, receipt: InjectionReceipt) =>
  JSON.stringify(
    receipt.skipped
      ? { profileId, skipped: true }
      : {
        profileId,
        summary: receipt.summary,
        traits: receipt.traits,
        memories: receipt.memories,
        plugins: receipt.plugins,
        estimatedTokens: receipt.estimatedTokens
      }
  )

/**
 * A chat completion through the memory pipeline:
 * parse → resolve the user → inject context → forward → (record the turn + enqueue extraction).
 * The answer goes back as the provider sent it; recording happens after, in the background.
 */
export class Completion extends Context.Service<Completion, {
  readonly complete: (input: CompletionInput) => Effect.Effect<UpstreamReply, CompletionFailure>
}>()("gateway/pipeline/Completion") {
  static readonly layer = Layer.effect(
    Completion,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const profiles = yield* ProfileStore
      const traitSchema = yield* TraitSchema
      const upstream = yield* Upstream
      const background = yield* Background
      const host = yield* PluginHost
      const services = Context.make(AppConfig, config).pipe(
        Context.add(PluginHost, host),
        Context.add(ContextStore, yield* ContextStore),
        Context.add(TurnStore, yield* TurnStore),
        Context.add(Background, background)
      )

      const complete = Effect.fn("Completion.complete")(function*(input: CompletionInput) {
        const request = yield* parseChatRequest(input.text, input.headers, { maxMessages: config.maxMessages })
        const resolved = yield* host.resolveUser({ headers: input.headers, body: request.body, userId: request.userId })
        const userId = resolved === undefined ? undefined : yield* checkUserId(resolved, "the resolved user id")
        if (userId === undefined) return yield* new MissingUserId()
        const definitions = yield* Result.match(traitSchema.withRequestTraits(request.requestTraits), {
          onFailure: (problem) =>
            Effect.fail(new InvalidChatRequest({ code: "invalid_service_options", message: `Invalid trait declaration: ${problem}`, param: "service.traits" })),
          onSuccess: Effect.succeed
        })
        const target = yield* selectUpstream(input.headers, config.upstream)
        const { profile } = yield* profiles.getOrCreate(userId)
        const { messages, receipt } = yield* inject(request, profile, definitions).pipe(Effect.provideContext(services))
        const body = yield* host.beforeForward({ profile, body: { ...request.body, messages } })

        const reply = yield* upstream.chat(target, body, {
          headers: forwardedHeaders(input.headers),
          includeUsage: request.includeUsage
        })
        const headers = { ...reply.headers, [CONTEXT_HEADER]: receiptHeader(profile.id, receipt) }
        // Recording (parsing included) happens after the answer has gone out, off the request path.
        const record = (answer: () => AssembledReply | undefined) =>
          background.run(
            "record-turn",
            Effect.suspend(() => {
              const reply = answer()
              return reply === undefined ? Effect.void : recordTurn(request, profile, input.requestId, reply)
            }).pipe(Effect.provideContext(services))
          )

        if (reply._tag === "Body") {
          if (reply.status === 200) yield* record(() => replyOfCompletion(reply.body))
          return { ...reply, headers }
        }

        const assembler = makeStreamAssembler()
        let failed = false
        const events = reply.events.pipe(
          Stream.tap((chunk) => Effect.sync(() => assembler.feed(chunk))),
          Stream.catchTag("UpstreamStreamError", (error) => {
            failed = true
            return Stream.succeed(errorEvent(error))
          }),
          // A client that disconnects interrupts the stream (and the upstream request): nothing is recorded.
          Stream.onExit((exit) =>
            Exit.isSuccess(exit) && !failed && assembler.isComplete() ? record(assembler.reply) : Effect.void
          )
        )
        return { ...reply, headers, events }
      })

      return Completion.of({ complete })
    })
  )
}
