import { Context, Effect } from "effect"

/**
 * Where a part of the gateway reports a failure it cannot recover from (the embedded PostgreSQL
 * will not come back). The service process (`src/main.ts`) shuts down and exits non-zero, so an
 * orchestrator restarts it; an application embedding the gateway installs its own handler, and
 * without one the failure is logged.
 */
export const FatalError = Context.Reference<(error: unknown) => Effect.Effect<void>>("gateway/background/FatalError", {
  defaultValue: () => (error) => Effect.logFatal("unrecoverable failure", error)
})
