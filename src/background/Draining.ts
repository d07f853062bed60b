import { Context, Effect, Layer, type Scope } from "effect"
import { ServerConfig } from "../http/ServerConfig.ts"

/** Streams still running this long before the drain ends are ended by the gateway, cleanly. */
const STREAM_END_MARGIN_MS = 1000

/**
 * The shutdown drain as seen by responses that outlast it. Shutdown gives requests in flight
 * `SHUTDOWN_DRAIN_MS` to finish; a stream still running near the end is ended by the gateway with an SSE
 * error event (instead of a socket cut the client cannot tell from a network failure).
 */
export class Draining extends Context.Service<
  Draining,
  {
    /**
     * Calls `end` when streams must end (at once if that time has come), unless the scope has closed
     * first. A callback rather than an effect to wait for: an open stream holds no fiber for it.
     */
    readonly whenStreamsEnd: (end: () => void) => Effect.Effect<void, never, Scope.Scope>
    /** Shutdown has begun: starts the drain's clock. */
    readonly begin: Effect.Effect<void>
  }
>()("gateway/background/Draining") {
  static readonly layer = Layer.effect(
    Draining,
    Effect.gen(function* () {
      const drainMs = (yield* ServerConfig).shutdownDrainMs
      const scope = yield* Effect.scope
      const waiting = new Set<() => void>()
      let ended = false
      const endStreams = Effect.sync(() => {
        ended = true
        for (const end of waiting) end()
        waiting.clear()
      })
      return Draining.of({
        whenStreamsEnd: (end) =>
          ended
            ? Effect.sync(end)
            : Effect.acquireRelease(
                Effect.sync(() => waiting.add(end)),
                () => Effect.sync(() => waiting.delete(end))
              ),
        begin: Effect.sleep(drainMs - STREAM_END_MARGIN_MS).pipe(
          Effect.andThen(endStreams),
          Effect.forkIn(scope),
          Effect.asVoid
        )
      })
    })
  )

  /**
   * Starts the drain's clock when shutdown begins. Built after the HTTP server (so released
   * before it): its finalizer runs as the server stops accepting.
   */
  static readonly onShutdown = Layer.effectDiscard(
    Effect.flatMap(Draining, (draining) => Effect.addFinalizer(() => draining.begin))
  )
}
