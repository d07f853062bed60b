/**
 * The command line: `profile-memory-gateway <command>` (also `pmg`). `start` and `migrate` work on
 * this machine's configuration; the other commands talk to a running gateway over its management API.
 */
import { readFileSync } from "node:fs"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Effect, Runtime } from "effect"
import { Command } from "effect/cli"
import { serveTeardown } from "../app/serve.ts"
import { doctor } from "./commands/doctor.ts"
import { jobs } from "./commands/jobs.ts"
import { keys } from "./commands/keys.ts"
import { memories } from "./commands/memories.ts"
import { profiles } from "./commands/profiles.ts"
import { migrate, start } from "./commands/serve.ts"
import { usage } from "./commands/usage.ts"
import { describeFailure } from "./describeFailure.ts"
import { root } from "./root.ts"

const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  readonly version: string
}

/**
 * Whether this run is `start`: a signal is how a running gateway is asked to stop, so a clean stop
 * exits 0; every other command, interrupted, exits 130, so a script never mistakes it for success.
 */
let serving = false
const startServing = start.pipe(Command.provideEffectDiscard(Effect.sync(() => (serving = true))))

const cli = root.pipe(
  Command.withSubcommands([startServing, migrate, profiles, memories, keys, jobs, usage, doctor]),
  Command.run({ version })
)

const program = cli.pipe(
  // A failure is one line on stderr and exit code 1; the CLI's own usage errors are shown by it already.
  Effect.tapError((error) =>
    describeFailure(error).pipe(
      Effect.flatMap((line) => (line === undefined ? Effect.void : Console.error(`error: ${line}`)))
    )
  ),
  // A defect too (exit code 1), rather than a silent exit; `start` has logged its own.
  Effect.tapDefect((defect) =>
    serving ? Effect.void : Console.error(`error: ${defect instanceof Error ? defect.message : String(defect)}`)
  ),
  Effect.provide(NodeServices.layer)
)

NodeRuntime.runMain(program, {
  disableErrorReporting: true,
  teardown: (exit, onExit) => (serving ? serveTeardown : Runtime.defaultTeardown)(exit, onExit)
})
