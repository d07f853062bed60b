import { Context, Deferred, Effect, Layer, Schema } from "effect"
import { ServerConfig } from "../http/ServerConfig.ts"

/** Streams still running this long before the drain ends are ended by the gateway, cleanly. */
const STREAM_END_MARGIN_MS = 1000

/** The stream was ended because the gateway is shutting down. */
export class ShuttingDown extends Schema.TaggedError<ShuttingDown>()("ShuttingDown", {}) {}

/**
 * The shutdown drain as seen by responses that outlast it. Shutdown gives requests in flight
 * `SHUTDOWN_DRAIN_MS` to finish; a stream still running near the end is ended by the gateway with an SSE
 * error event (instead of a socket cut the client cannot tell from a network failure).
 */
export class Draining extends Context.Service<
  Draining,
  {
    /** Fails with `ShuttingDown` when streams must end; never completes otherwise. */
    readonly streamsEnd: Effect.Effect<never, ShuttingDown>
    /** Shutdown has begun: starts the drain's clock. */
    readonly begin: Effect.Effect<void>
  }
>()("gateway/background/Draining") {
  static readonly layer = Layer.effect(
    Draining,
    Effect.gen(function* () {
      const drainMs = (yield* ServerConfig).shutdownDrainMs
      const end = yield* Deferred.make<never, ShuttingDown>()
      const scope = yield* Effect.scope
      return Draining.of({
        streamsEnd: Deferred.await(end),
        begin: Effect.sleep(drainMs - STREAM_END_MARGIN_MS).pipe(
          Effect.andThen(Deferred.fail(end, new ShuttingDown())),
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
