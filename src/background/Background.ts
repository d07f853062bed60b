import { Context, type Duration, Effect, FiberSet, Layer } from "effect"

/**
 * Work that outlives the request that started it (recording a turn, touching memories). It runs
 * detached from the request, so a client that disconnects does not cancel it; on shutdown the
 * layer waits for it (up to `drainTimeout`) before the database closes.
 */
export class Background extends Context.Service<
  Background,
  {
    readonly run: <A, E>(name: string, effect: Effect.Effect<A, E>) => Effect.Effect<void>
    readonly inFlight: Effect.Effect<number>
  }
>()("gateway/background/Background") {
  static readonly layer = (options?: { readonly drainTimeout?: Duration.Input }) =>
    Layer.effect(
      Background,
      Effect.gen(function* () {
        const fibers = yield* FiberSet.make<unknown, unknown>()
        // Registered after the set, so it runs first: drain, then the set interrupts what is left.
        yield* Effect.addFinalizer(() =>
          FiberSet.awaitEmpty(fibers).pipe(Effect.timeoutOption(options?.drainTimeout ?? "10 seconds"))
        )
        return Background.of({
          run: (name, effect) =>
            FiberSet.run(
              fibers,
              // No span per task: this runs after every request, and the log line names the task.
              Effect.catchCause(effect, (cause) => Effect.logError(`background task ${name} failed`, cause))
            ).pipe(Effect.asVoid),
          inFlight: FiberSet.size(fibers)
        })
      })
    )
}
