import { Effect, Runtime } from "effect"
import { Command } from "effect/cli"
import { AlreadyReported } from "../CliFailure.ts"

// `start` and `migrate` load the server's and the database's modules when they run, never before:
// every other command (and `--version`, `--help`) starts without them.

/** How the process ends: the default, until `start` has loaded the server and put its own rule here. */
let teardown: Runtime.Teardown = Runtime.defaultTeardown

/**
 * The CLI's teardown: after `start`, a signal is how a running gateway is asked to stop, so a clean stop
 * exits 0; any other command, interrupted, exits 130, so a script never mistakes it for success.
 */
export const cliTeardown: Runtime.Teardown = (exit, onExit) => teardown(exit, onExit)

export const start = Command.make("start", {}, () =>
  Effect.promise(() => import("../../app/serve.ts")).pipe(
    Effect.tap(({ serveTeardown }) => Effect.sync(() => (teardown = serveTeardown))),
    Effect.flatMap(({ serve }) => serve.pipe(Effect.mapError(() => new AlreadyReported())))
  )
).pipe(
  Command.withDescription(
    "Run the gateway (configured by the environment: docs/configuration.md); SIGTERM or SIGINT drain it and stop"
  )
)

export const migrate = Command.make("migrate", {}, () =>
  Effect.promise(() => import("../migrate/migrateDatabase.ts")).pipe(Effect.flatMap((loaded) => loaded.migrateDatabase))
).pipe(
  Command.withDescription(
    "Apply the database migrations and exit (DATABASE_URL, else the embedded PostgreSQL); `start` runs them too"
  )
)
