import { Cause, Deferred, Effect, Exit, Layer, Runtime } from "effect"
import { FatalError } from "../background/FatalError.ts"
import { StartupLoggingLive } from "../observability/Logging.ts"
import { appConfigFromEnv } from "./AppConfig.ts"
import { GatewayLive } from "./Gateway.ts"
import { NodeServerLive } from "./HttpServerLive.ts"

/** Beyond the drain and the extraction worker's grace: the last turn writes, closing the pool, stopping PostgreSQL. */
const SHUTDOWN_MARGIN_MS = 15_000

/**
 * Whatever hangs, a shutdown ends within the drain, the worker's grace and the margin: past that
 * the process exits with 1.
 */
const armShutdownLimit = (limitMs: number) =>
  Effect.gen(function* () {
    // The timer fires outside the fibers: it logs with the start-up logger, in the configured format.
    const logger = yield* Effect.context<never>()
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      process.once(signal, () => {
        setTimeout(() => {
          Effect.runSyncWith(logger)(
            Effect.logFatal(`shutdown did not finish within ${Math.round(limitMs / 1000)} s; exiting`)
          )
          process.exit(1)
        }, limitMs).unref()
      })
    }
  })

/** How often the gateway checks that the process that started it is still there. */
const PARENT_CHECK_MS = 1000

/**
 * A gateway whose parent ended (`npm start` killed by its pid, a terminal closed) would run on as an
 * orphan, holding its port and its embedded PostgreSQL: it shuts down as on SIGTERM instead. Not under
 * an init process (a container's PID 1, systemd), whose children are never orphans.
 */
const exitWithParent = Effect.gen(function* () {
  const parent = process.ppid
  if (parent <= 1) return
  const logger = yield* Effect.context<never>()
  const check = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(check)
    Effect.runSyncWith(logger)(Effect.logWarning(`the parent process (${parent}) ended: shutting down`))
    process.kill(process.pid, "SIGTERM")
  }, PARENT_CHECK_MS)
  check.unref()
})

// Runs until SIGTERM/SIGINT, or until a part reports a failure it cannot recover from: then the
// gateway shuts down as usual and the process exits non-zero, for the orchestrator to restart it.
export const serve = Effect.gen(function* () {
  const config = yield* appConfigFromEnv
  yield* armShutdownLimit(config.server.shutdownDrainMs + config.extraction.shutdownGraceMs + SHUTDOWN_MARGIN_MS)
  yield* exitWithParent
  const fatal = yield* Deferred.make<never, unknown>()
  yield* Layer.launch(GatewayLive(NodeServerLive)).pipe(
    Effect.provideService(FatalError, (error) => Deferred.fail(fatal, error).pipe(Effect.asVoid)),
    Effect.raceFirst(Deferred.await(fatal))
  )
}).pipe(
  // Reported here rather than by runMain, so that a failed start (a bad setting, a malformed
  // TRAITS_FILE) is logged in the configured format too: one JSON line with LOG_FORMAT=json.
  Effect.tapCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logError(cause))),
  Effect.provide(StartupLoggingLive)
)

/**
 * How the process ends: SIGTERM/SIGINT ask for a shutdown, and once it has drained cleanly that is a
 * success (exit 0); a failure exits non-zero.
 */
export const serveTeardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
