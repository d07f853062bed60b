import { Effect } from "effect"
import { Command } from "effect/cli"

/**
 * Checks what a `start` in this environment would depend on: the configuration, the database, the
 * provider, the routes file (`ROUTES_FILE`: each target's key and endpoint), the extraction and embedding
 * models, and a gateway already running at `--url`. Exits 1 when a check fails. The checks' modules are
 * loaded when it runs, not by every command.
 */
export const doctor = Command.make("doctor", {}, () =>
  Effect.promise(() => import("../doctor/runDoctor.ts")).pipe(Effect.flatMap((loaded) => loaded.runDoctor))
).pipe(
  Command.withDescription(
    "Check the configuration, the database, the provider, the routes file, the models and a running gateway; exits 1 if one fails"
  )
)
