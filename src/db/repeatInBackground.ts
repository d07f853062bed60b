import { Cause, type Duration, Effect, type Scope } from "effect"
import { exportedIfWorked } from "../observability/idleSpans.ts"
import { forkListener } from "./forkListener.ts"

/**
 * Runs `work` now and then every `every` for the life of the current scope (every replica runs its
 * own: the sweeps are idempotent). A failure is logged as `failure` and the next round comes as usual.
 */
export const repeatInBackground = <E, R>(
  work: Effect.Effect<unknown, E, R>,
  every: Duration.Input,
  failure: string
): Effect.Effect<void, never, R | Scope.Scope> =>
  forkListener(
    work.pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning(failure, cause)
      ),
      Effect.andThen(Effect.sleep(every)),
      Effect.forever
    )
  )

/**
 * Keeps an in-memory copy of a table current: every `every`, reads its `version` (a cheap query) and runs
 * `reload` when it changed since the last one. Traced only when it reloaded: an idle gateway exports no
 * span for the check. `reload` must read the version it loads as of, so a change during it is read next time.
 */
export const followVersion = <E, R>(options: {
  readonly version: Effect.Effect<string, E, R>
  readonly reload: Effect.Effect<void, E, R>
  readonly current: () => string
  readonly every: Duration.Input
  readonly failure: string
}): Effect.Effect<void, never, R | Scope.Scope> =>
  forkListener(
    Effect.sleep(options.every).pipe(
      Effect.andThen(
        exportedIfWorked(
          (changed: boolean) => changed,
          (keep) =>
            Effect.gen(function* () {
              if ((yield* options.version) === options.current()) return false
              yield* keep
              yield* options.reload
              return true
            })
        )
      ),
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning(options.failure, cause)
      ),
      Effect.forever
    )
  )
