import { Cause, Context, Deferred, Effect, Exit, Fiber, Layer, Metric, Option, Predicate, Schema } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"
import { DatabaseConfig } from "./DatabaseConfig.ts"
import { makeReservedConnection } from "./ReservedConnection.ts"

/** A database step on the request path did not finish in time, or the database is known to be down. */
export class DatabaseUnavailable
  extends Schema.TaggedError<DatabaseUnavailable>()("DatabaseUnavailable", {
    reason: Schema.Literals(["timeout", "unreachable", "down"])
  })
  implements ClientFacing<503>
{
  /** Seen by a client only with FAIL_OPEN=false; by default such a request goes on without memory. */
  get clientError() {
    return clientError(503, "memory_unavailable", "The memory store is unavailable; retry shortly", {
      headers: { "retry-after": "1" }
    })
  }
}

const databaseAvailable = Metric.gauge("gateway_database_available", {
  description: "1 while the database answers within DATABASE_REQUEST_TIMEOUT_MS, 0 while requests go without memory"
})

export const requestsWithoutMemory = Metric.counter("gateway_requests_without_memory_total", {
  description: "Completions forwarded without injected context because the database was unavailable",
  incremental: true
})

/** While the database is down, it is probed this often (a request never waits for it meanwhile). */
const PROBE_INTERVAL = "500 millis"

/**
 * SQLSTATEs that say the server cannot serve anyone now: connection exceptions (08), insufficient
 * resources (53), and shutting down, crashed or starting up (57P01–57P05).
 */
const UNAVAILABLE_STATES = /^(08|53|57P0[1-5])/

const sqlStateOf = (error: SqlError.SqlError) => {
  const cause: unknown = error.reason.cause
  return Predicate.hasProperty(cause, "code") && Predicate.isString(cause.code) ? cause.code : undefined
}

/**
 * A SQL failure that says the database cannot be reached now (connection refused or lost, the
 * server shutting down or starting up), as opposed to a statement the database refused. Stores
 * turn many SQL errors into defects, so both places are searched.
 */
export const isUnreachable = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.some((reason) => {
    const error = Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : undefined
    return SqlError.isSqlError(error) && (error.isRetryable || UNAVAILABLE_STATES.test(sqlStateOf(error) ?? ""))
  })

/** The failure is a missed deadline (`withDeadline`), or the database known to be down. */
export const isTimedOut = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.some((reason) => Cause.isFailReason(reason) && reason.error instanceof DatabaseUnavailable)

/**
 * Runs `effect` for at most `ms`. The caller stops waiting at the deadline even if the effect
 * cannot be interrupted promptly (a query on a frozen connection): it is interrupted in the background.
 */
export const withDeadline = <A, E, R>(effect: Effect.Effect<A, E, R>, ms: number) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.forkDetach(effect)
    const stopInBackground = Effect.forkDetach(Fiber.interrupt(fiber))
    const exit = yield* Fiber.await(fiber).pipe(
      Effect.timeoutOption(ms),
      Effect.onInterrupt(() => stopInBackground)
    )
    if (Option.isNone(exit)) {
      yield* stopInBackground
      return yield* new DatabaseUnavailable({ reason: "timeout" })
    }
    return yield* exit.value
  })

/**
 * Whether the request path may use the database. Every database step of a request runs through
 * `guard`, within `DATABASE_REQUEST_TIMEOUT_MS`; a step that misses it (or cannot connect) goes
 * on without memory, and makes the database be asked directly: `SELECT 1` on a connection of its
 * own, so a busy pool does not count as an outage. Only if that misses the deadline too is the
 * database down: guarded steps then fail at once (no extra latency), waits for turn writes end,
 * and the probe runs every 500 ms until the database answers again. The turn writer keeps the same
 * deadline (its watchdog `suspect`s the database), so a frozen database never holds an answer's end longer.
 */
export class DatabaseHealth extends Context.Service<
  DatabaseHealth,
  {
    readonly guard: <A, E, R>(step: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
    readonly isAvailable: () => boolean
    /** Completes as soon as the database is down (at once if it is now). */
    readonly whenUnavailable: Effect.Effect<void>
    /** Has the database asked directly (one probe at a time), as a step past its deadline does. */
    readonly suspect: Effect.Effect<void>
    /** Asks the database now (`SELECT 1` within the deadline), for `/ready`. */
    readonly check: Effect.Effect<boolean>
    /** Records a failure seen elsewhere (the turn writer): the database is down until the probe answers. */
    readonly reportUnreachable: Effect.Effect<void>
  }
>()("gateway/db/DatabaseHealth") {
  static readonly layer = Layer.effect(
    DatabaseHealth,
    Effect.gen(function* () {
      const deadlineMs = (yield* DatabaseConfig).requestTimeoutMs
      const scope = yield* Effect.scope
      const connection = yield* makeReservedConnection()
      const sql = yield* SqlClient.SqlClient
      let available = true
      let down = yield* Deferred.make<void>()
      let probing = false
      yield* Metric.update(databaseAvailable, 1)
      // Reserved now, while the pool is idle: under load, reserving could itself wait.
      yield* Effect.ignore(connection.execute(sql`SELECT 1`))

      const ping = withDeadline(connection.execute(sql`SELECT 1`), deadlineMs).pipe(
        Effect.tapError(() => connection.drop),
        Effect.exit,
        Effect.map(Exit.isSuccess)
      )

      const setAvailable = (value: boolean) =>
        Effect.gen(function* () {
          if (available === value) return
          available = value
          yield* Metric.update(databaseAvailable, value ? 1 : 0)
          if (value) {
            down = yield* Deferred.make<void>()
            yield* Effect.logInfo("database reachable again: memory is back on the request path")
          } else {
            yield* Deferred.succeed(down, undefined)
            yield* Effect.logWarning("database unavailable: requests are forwarded without memory until it is back")
          }
        })

      // One probe loop at a time, started by the transition to "down", ended by the first answer.
      const probeUntilBack = Effect.sleep(PROBE_INTERVAL).pipe(
        Effect.andThen(ping),
        Effect.repeat({ until: (ok) => ok }),
        Effect.andThen(setAvailable(true)),
        Effect.ensuring(Effect.sync(() => (probing = false)))
      )

      const reportUnreachable = Effect.gen(function* () {
        yield* setAvailable(false)
        if (probing) return
        probing = true
        yield* Effect.forkIn(probeUntilBack, scope)
      })

      /** Single flight: requests that miss their deadline together cause one probe. */
      let probe: Effect.Effect<boolean> | undefined
      const probeNow = Effect.suspend(() => {
        if (probe !== undefined) return Effect.void
        probe = ping.pipe(
          Effect.tap((ok) => (ok ? Effect.void : reportUnreachable)),
          Effect.ensuring(Effect.sync(() => (probe = undefined)))
        )
        return Effect.asVoid(Effect.forkIn(probe, scope))
      })

      const guard = <A, E, R>(step: Effect.Effect<A, E, R>): Effect.Effect<A, E | DatabaseUnavailable, R> =>
        Effect.suspend(() => {
          if (!available) return Effect.fail(new DatabaseUnavailable({ reason: "down" }))
          return withDeadline(step, deadlineMs).pipe(
            Effect.catchCause((cause): Effect.Effect<never, E | DatabaseUnavailable> => {
              const timedOut = isTimedOut(cause)
              if (!timedOut && !isUnreachable(cause)) return Effect.failCause(cause as Cause.Cause<E>)
              return probeNow.pipe(
                Effect.andThen(Effect.fail(new DatabaseUnavailable({ reason: timedOut ? "timeout" : "unreachable" })))
              )
            })
          )
        })

      const whenUnavailable = Effect.suspend(() => Deferred.await(down))

      const check = ping.pipe(Effect.tap((ok) => (ok ? setAvailable(true) : reportUnreachable)))

      return DatabaseHealth.of({
        guard,
        isAvailable: () => available,
        whenUnavailable,
        suspect: probeNow,
        check,
        reportUnreachable
      })
    })
  )
}
