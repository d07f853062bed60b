import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, type Duration, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { TestClock } from "effect/testing"
import { Background } from "../../src/background/Background.ts"

/** The service in a scope of its own, so a test can shut it down. */
const started = (drainTimeout: Duration.Input) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const background = Context.get(yield* Layer.buildWithScope(Background.layer({ drainTimeout }), scope), Background)
    return { background, shutDown: Scope.close(scope, Exit.void) }
  })

describe("background work", () => {
  it.effect("outlives the request that started it (a client that disconnects cancels nothing)", () =>
    Effect.gen(function* () {
      const { background } = yield* started("10 seconds")
      const handedOver = yield* Deferred.make<void>()
      const done = yield* Deferred.make<void>()
      const request = yield* Effect.forkChild(
        background
          .run("record", Deferred.succeed(done, undefined).pipe(Effect.delay("1 second")))
          .pipe(Effect.andThen(Deferred.succeed(handedOver, undefined)), Effect.andThen(Effect.never))
      )
      yield* Deferred.await(handedOver)
      yield* Fiber.interrupt(request)
      assert.strictEqual(yield* background.inFlight, 1)
      yield* TestClock.adjust("1 second")
      yield* Deferred.await(done)
    })
  )

  it.effect("is waited for at shutdown, so a turn being recorded is not lost", () =>
    Effect.gen(function* () {
      const { background, shutDown } = yield* started("10 seconds")
      const recorded = yield* Deferred.make<void>()
      yield* background.run("record", Deferred.succeed(recorded, undefined).pipe(Effect.delay("3 seconds")))
      const closing = yield* Effect.forkChild(shutDown)
      yield* TestClock.adjust("3 seconds")
      yield* Fiber.join(closing)
      assert.isTrue(yield* Deferred.isDone(recorded))
    })
  )

  it.effect("is given up after the drain timeout, so a stuck task cannot hold shutdown forever", () =>
    Effect.gen(function* () {
      const { background, shutDown } = yield* started("10 seconds")
      const interrupted = yield* Deferred.make<void>()
      yield* background.run(
        "stuck",
        Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined)))
      )
      const closing = yield* Effect.forkChild(shutDown)
      yield* TestClock.adjust("9 seconds")
      assert.isUndefined(closing.pollUnsafe(), "still draining before the timeout")
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(closing)
      yield* Deferred.await(interrupted)
    })
  )
})
