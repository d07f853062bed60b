import { randomUUID } from "node:crypto"
import { Context, Deferred, Effect, Fiber, Layer, Metric, Schedule } from "effect"
import { isTimedOut, isUnreachable, withDeadline } from "../db/DatabaseHealth.ts"
import { UsageAttribution, type UsageEvent } from "../domain/Usage.ts"
import { UsageConfig } from "./UsageConfig.ts"
import { type UsageEventRow, UsageRepo, type WrittenSums } from "./UsageRepo.ts"

/** Most events one statement writes. */
const MAX_BATCH = 1000
/** Most events waiting while the database is away; past it new ones are dropped (and counted). */
const MAX_WAITING = 100_000
const WRITE_DEADLINE_MS = 10_000
/** How long shutdown keeps trying to write what is left. */
const SHUTDOWN_FLUSH_MS = 5000

const usageTokens = Metric.counter("gateway_usage_tokens_total", {
  description:
    "Tokens recorded, as the providers reported them, by namespace, model, work (app, or the gateway's memory work) and kind (input, cached_input, cache_write, output, reasoning, injected)",
  incremental: true
})
const usageRequests = Metric.counter("gateway_usage_requests_total", {
  description: "Provider calls recorded, by namespace, model and work",
  incremental: true
})
export const usageLost = Metric.counter("gateway_usage_events_lost_total", {
  description: "Usage events never written (the buffer was full while the database was away, or it refused them)",
  incremental: true
})

/**
 * The usage counters' series of one namespace, model and work, at 0 (`gateway_usage_*`): the
 * dashboard's usage panels then have data before the first usage is written.
 */
export const usageSeriesAtZero = (labels: {
  readonly namespace: string
  readonly model: string
  readonly work: string
}) =>
  Effect.andThen(
    Metric.update(Metric.withAttributes(usageRequests, labels), 0),
    Effect.forEach(TOKEN_KINDS, (token) => Metric.update(Metric.withAttributes(usageTokens, { ...labels, token }), 0), {
      discard: true
    })
  )

/** The `token` label's values. */
const TOKEN_KINDS = ["input", "cached_input", "cache_write", "output", "reasoning", "injected"] as const

const countWritten = (written: ReadonlyArray<WrittenSums>) =>
  Effect.forEach(
    written,
    ({ namespace, model, work, requests, ...tokens }) => {
      const labels = { namespace, model, work }
      const kinds = {
        input: tokens.input,
        cached_input: tokens.cachedInput,
        cache_write: tokens.cacheWrite,
        output: tokens.output,
        reasoning: tokens.reasoning,
        injected: tokens.injected
      }
      return Effect.andThen(
        Metric.update(Metric.withAttributes(usageRequests, labels), requests),
        Effect.forEach(
          Object.entries(kinds),
          ([token, value]) =>
            value > 0 ? Metric.update(Metric.withAttributes(usageTokens, { ...labels, token }), value) : Effect.void,
          { discard: true }
        )
      )
    },
    { discard: true }
  )

const rowOf = (event: UsageEvent, attribution: typeof UsageAttribution.Service): UsageEventRow => {
  const usage = event.usage
  return {
    id: randomUUID(),
    at: new Date().toISOString(),
    namespace: event.namespace ?? "",
    keyId: event.keyId ?? attribution?.keyId ?? "",
    userId: event.userId ?? "",
    profileId: event.profileId ?? attribution?.profileId ?? null,
    work: event.work,
    provider: event.provider,
    api: event.api,
    model: event.model,
    reported: usage !== undefined,
    input: usage?.input ?? 0,
    cachedInput: usage?.cachedInput ?? 0,
    cacheWrite: usage?.cacheWrite ?? 0,
    output: usage?.output ?? 0,
    reasoning: usage?.reasoning ?? 0,
    injected: event.injected
  }
}

/**
 * Records every provider call's tokens. `record` only queues the event (no database write on the
 * request path): one writer stores what is waiting, gathered for `USAGE_BATCH_MS`, all of it in one
 * statement, so an answer's usage is in the database within that and a write after its end. While the database is
 * away the events wait in memory (at most 100,000) and are written once it is back.
 */
export class UsageRecorder extends Context.Service<
  UsageRecorder,
  {
    /**
     * Queues one call's usage; the profile of a job running here (`UsageAttribution`) when the event names
     * none. `promptly`: written without waiting for others to gather (a request under a budget, which the
     * other replicas read from the database).
     */
    readonly record: (event: UsageEvent, options?: { readonly promptly?: boolean }) => Effect.Effect<void>
    /** Completes once every event recorded before it was written (or dropped): for tests and shutdown. */
    readonly flushed: Effect.Effect<void>
    /** The events not in the database yet (waiting, or being written): what a budget adds to its day sums. */
    readonly unwritten: Effect.Effect<ReadonlyArray<UsageEventRow>>
  }
>()("gateway/usage/UsageRecorder") {
  static readonly layer = Layer.effect(
    UsageRecorder,
    Effect.gen(function* () {
      const repo = yield* UsageRepo
      const { batchMs } = yield* UsageConfig
      let waiting: Array<UsageEventRow> = []
      let writing: ReadonlyArray<UsageEventRow> = []
      let wake = yield* Deferred.make<void>()
      // Completed when an event must not wait for the batch to gather.
      let hurry = yield* Deferred.make<void>()
      // Events queued so far, and of them those written (or refused): batches leave in order.
      let queued = 0
      let settled = 0
      let flushWaiters: Array<{ readonly upTo: number; readonly done: Deferred.Deferred<void> }> = []

      const settle = (count: number) =>
        Effect.suspend(() => {
          settled += count
          const due = flushWaiters.filter((waiter) => waiter.upTo <= settled)
          flushWaiters = flushWaiters.filter((waiter) => waiter.upTo > settled)
          return Effect.forEach(due, ({ done }) => Deferred.succeed(done, undefined), { discard: true })
        })

      /** Writes the next batch; `false` when the database cannot be reached (the batch waits again, in front). */
      const writeOnce = Effect.uninterruptible(
        Effect.gen(function* () {
          const batch = waiting.slice(0, MAX_BATCH)
          waiting = waiting.slice(batch.length)
          writing = batch
          const result = yield* Effect.exit(withDeadline(repo.write(batch), WRITE_DEADLINE_MS))
          writing = []
          if (result._tag === "Success") {
            yield* countWritten(result.value)
            yield* settle(batch.length)
            return true
          }
          if (isUnreachable(result.cause) || isTimedOut(result.cause)) {
            // Ids chosen here: a retry of a write that did commit stores nothing twice.
            waiting = [...batch, ...waiting]
            return false
          }
          yield* Effect.logError(
            `the database refused ${batch.length} usage events; they are not recorded`,
            result.cause
          )
          yield* Metric.update(usageLost, batch.length)
          yield* settle(batch.length)
          return true
        })
      )

      const writer = Effect.gen(function* () {
        yield* Deferred.await(wake)
        if (batchMs > 0) yield* Effect.raceFirst(Effect.sleep(batchMs), Deferred.await(hurry))
        wake = yield* Deferred.make<void>()
        hurry = yield* Deferred.make<void>()
        while (waiting.length > 0) {
          yield* writeOnce.pipe(
            Effect.repeat({
              until: (ok) => ok,
              schedule: Schedule.min([Schedule.exponential("100 millis"), Schedule.spaced("2 seconds")])
            })
          )
        }
      }).pipe(Effect.forever)
      const writerFiber = yield* Effect.forkScoped(writer)

      yield* Effect.addFinalizer(() =>
        Effect.gen(function* () {
          yield* Fiber.interrupt(writerFiber)
          yield* writeOnce.pipe(
            Effect.repeat({ while: () => waiting.length > 0, schedule: Schedule.spaced("200 millis") }),
            Effect.timeoutOption(SHUTDOWN_FLUSH_MS)
          )
          if (waiting.length > 0) {
            yield* Effect.logError(`${waiting.length} usage events could not be written before shutdown`)
            yield* Metric.update(usageLost, waiting.length)
          }
        })
      )

      return UsageRecorder.of({
        record: (event, options) =>
          Effect.flatMap(UsageAttribution, (attribution) => {
            if (waiting.length >= MAX_WAITING) return Metric.update(usageLost, 1)
            waiting.push(rowOf(event, attribution))
            queued++
            const woken = Deferred.succeed(wake, undefined)
            return options?.promptly === true ? Effect.andThen(woken, Deferred.succeed(hurry, undefined)) : woken
          }),
        unwritten: Effect.sync(() => [...writing, ...waiting]),
        flushed: Effect.suspend(() => {
          if (settled >= queued) return Effect.void
          const done = Deferred.makeUnsafe<void>()
          flushWaiters.push({ upTo: queued, done })
          return Deferred.await(done)
        })
      })
    })
  ).pipe(Layer.provide(UsageRepo.layer))
}
