import { NodeRuntime } from "@effect/platform-node"
import { Cause, Deferred, Effect, Exit, Layer, Runtime } from "effect"
import { FatalError } from "./background/FatalError.ts"
import { GatewayLive } from "./Gateway.ts"
import { NodeServerLive } from "./http/HttpServerLive.ts"

// Runs until SIGTERM/SIGINT, or until a part reports a failure it cannot recover from: then the
// gateway shuts down as usual and the process exits non-zero, for the orchestrator to restart it.
const main = Effect.gen(function*() {
  const fatal = yield* Deferred.make<never, unknown>()
  yield* Layer.launch(GatewayLive(NodeServerLive)).pipe(
    Effect.provideService(FatalError, (error) => Deferred.fail(fatal, error).pipe(Effect.asVoid)),
    Effect.raceFirst(Deferred.await(fatal))
  )
})

/**
 * Whatever hangs, shutdown ends within this: the HTTP drain (15 s), the extraction worker's grace
 * (10 s) and the last turn writes (5 s), with room to spare. Past it the process exits with 1.
 */
const SHUTDOWN_LIMIT_MS = 40_000
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    setTimeout(() => {
      process.stderr.write(`shutdown did not finish within ${SHUTDOWN_LIMIT_MS / 1000} s; exiting\n`)
      process.exit(1)
    }, SHUTDOWN_LIMIT_MS).unref()
  })
}

NodeRuntime.runMain(main, {
  // SIGTERM/SIGINT ask for a shutdown: once it has drained cleanly, that is a success.
  teardown: (exit, onExit) =>
    Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
})
