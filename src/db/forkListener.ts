import { Effect, Fiber, type Scope } from "effect"

/** Ending a LISTEN connection waits for the server, forever if it is frozen: shutdown waits this long at most. */
const STOP_TIMEOUT = "1 second"

/**
 * Runs a notification listener for the life of the current scope. Unlike `forkScoped`, closing
 * the scope never hangs on it: the listener is asked to stop and left behind after `STOP_TIMEOUT`.
 */
export const forkListener = <E, R>(listen: Effect.Effect<unknown, E, R>): Effect.Effect<void, never, R | Scope.Scope> =>
  Effect.gen(function* () {
    const listener = yield* Effect.forkDetach(listen)
    yield* Effect.addFinalizer(() => Fiber.interrupt(listener).pipe(Effect.timeoutOption(STOP_TIMEOUT)))
  })
