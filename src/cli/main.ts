/**
 * The command line: `profile-memory-gateway <command>` (also `pmg`). `start` and `migrate` work on
 * this machine's configuration; the other commands talk to a running gateway over its management API.
 *
 * Only the typed client and the commands' definitions load here: `start`, `migrate` and `doctor` import
 * the server's, the database's and the checks' modules when they run (test/unit/cliStartup.test.ts keeps it so).
 */
import { readFileSync } from "node:fs"
// Its modules, not the package's index: that one loads Redis's client and `ws` too (about 800 modules).
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Console, Effect } from "effect"
import { Command } from "effect/cli"
import { doctor } from "./commands/doctor.ts"
import { jobs } from "./commands/jobs.ts"
import { keys } from "./commands/keys.ts"
import { memories } from "./commands/memories.ts"
import { namespaces } from "./commands/namespaces.ts"
import { profiles } from "./commands/profiles.ts"
import { cliTeardown, migrate, start } from "./commands/serve.ts"
import { usage } from "./commands/usage.ts"
import { describeFailure } from "./describeFailure.ts"
import { root } from "./root.ts"

const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  readonly version: string
}

/** Whether this run is `start`, which logs its own failures. */
let serving = false
const startServing = start.pipe(Command.provideEffectDiscard(Effect.sync(() => (serving = true))))

const cli = root.pipe(
  Command.withSubcommands([startServing, migrate, profiles, memories, namespaces, keys, jobs, usage, doctor]),
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

NodeRuntime.runMain(program, { disableErrorReporting: true, teardown: cliTeardown })
