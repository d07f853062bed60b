import { PgClient } from "@effect/sql-pg"
import { type Cause, Context, Deferred, Effect, Exit, Fiber, Latch, Layer, Metric, Schedule, Schema } from "effect"
import { DatabaseConfig } from "../db/DatabaseConfig.ts"
import { DatabaseHealth, isTimedOut, isUnreachable, withDeadline } from "../db/DatabaseHealth.ts"
import { makeReservedConnection } from "../db/ReservedConnection.ts"
import { isForeignKeyViolation } from "../db/sqlResults.ts"
import { CurrentNamespace, namespacedUser, oneNamespace } from "../domain/Namespace.ts"
import type { ProfileId } from "../domain/Profile.ts"
import { Profiles } from "../profiles/Profiles.ts"
import type { Turn, WritableTurn } from "./Turn.ts"
import { heldBytes, nextBatchSize, turnStatement } from "./turnStatement.ts"

export type { Turn, TurnAttachment, TurnMessage, TurnTail } from "./Turn.ts"

export interface RecordedTurn {
  readonly profileId: ProfileId
  readonly messageIds: ReadonlyArray<string>
  readonly jobId: string | null
}

/**
 * The turn will never be written: the buffer was full, the database refused it, its profile was
 * erased after the answer (the user asked to be forgotten: the turn is dropped, not the profile
 * recreated), or the process stopped.
 */
export class TurnNotRecorded extends Schema.TaggedError<TurnNotRecorded>()("TurnNotRecorded", {
  reason: Schema.Literals(["buffer_full", "refused", "profile_erased", "shutdown"])
}) {}

/** A turn accepted for writing. */
export interface PendingTurn {
  /** Completes once the turn is in the database. */
  readonly written: Effect.Effect<RecordedTurn, TurnNotRecorded>
  /**
   * Completes once the turn is written, or as soon as the writer is stalled — a write in flight
   * past `DATABASE_REQUEST_TIMEOUT_MS`, or the database unreachable — while the turn waits in
   * memory: what the end of an answer waits for.
   */
  readonly settled: Effect.Effect<void, TurnNotRecorded>
}

interface Pending {
  readonly turn: Turn
  readonly messageIds: ReadonlyArray<string>
  readonly jobId: string | null
  readonly done: Deferred.Deferred<RecordedTurn, TurnNotRecorded>
}

interface Resolved extends Pending, WritableTurn {}

export const turnsWaiting = Metric.gauge("gateway_turns_waiting", {
  description: "Answered turns waiting to be written (more than a few: the database is slow or unavailable)"
})
export const turnsLost = Metric.counter("gateway_turns_lost_total", {
  description: "Answered turns that were never written, by reason (buffer_full, refused, profile_erased, shutdown)",
  incremental: true
})
const lostFor = (reason: TurnNotRecorded["reason"]) => Metric.withAttributes(turnsLost, { reason })

/**
 * Longest one write may take before it counts as failed. Writes are idempotent (ids are chosen
 * here), so retrying one that did commit after all stores nothing twice.
 */
const WRITE_DEADLINE_MS = 10_000

/** How long shutdown keeps trying to write what is left. */
const SHUTDOWN_FLUSH_MS = 5000

/** Most bytes of images and files the turns waiting in memory hold for extraction (past it: digests only). */
const MAX_WAITING_HELD_BYTES = 256 * 1024 * 1024

const userOf = (turn: Turn) => namespacedUser(turn.namespace, turn.userId)

/** The database cannot take writes now (as opposed to refusing this statement): keep the turns and retry. */
const isTransient = (cause: Cause.Cause<unknown>) => isUnreachable(cause) || isTimedOut(cause)

/**
 * Writes finished turns. Turns are group-committed by one writer fiber: each write is one
 * statement for every turn waiting (messages and extraction jobs together, so a turn's job exists
 * exactly when its messages do), and turns that finish while a write is in flight, or within
 * `RECORD_BATCH_MS`, share the next one. The writer has a connection of its own, so recording
 * never queues behind request traffic for the pool. While the database cannot be reached, turns
 * wait in memory (at most `RECORD_BUFFER_TURNS`) and are written once it is back.
 */
export class TurnsRepo extends Context.Service<
  TurnsRepo,
  {
    /** Accepts the turn for writing; fails at once only when the buffer is full. */
    readonly submit: (turn: Turn) => Effect.Effect<PendingTurn, TurnNotRecorded>
  }
>()("gateway/turns/TurnsRepo") {
  static readonly layer = Layer.effect(
    TurnsRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const config = yield* DatabaseConfig
      const health = yield* DatabaseHealth
      const profiles = yield* Profiles
      let pending: Array<Pending> = []
      let wake = yield* Deferred.make<void>()
      // When the write in flight started (performance.now()), if one is.
      let writingSince: number | undefined
      // Open while a write is in flight: the watchdog sleeps on it when the writer is idle.
      const writing = Latch.makeUnsafe(false)
      // Completed while the writer is stalled; a write that succeeds puts a fresh one in its place.
      let stalled = yield* Deferred.make<void>()
      const markStalled = Effect.suspend(() => Deferred.succeed(stalled, undefined))

      // The writer's own connection: recording never waits behind request traffic for the pool.
      // Unless RECORD_SYNCHRONOUS_COMMIT=true, a commit returns before the WAL is flushed to disk:
      // the turn is committed (visible, safe from a crash of the gateway) without the fsync wait; a
      // crash of the database server itself could lose its last 600 ms (3 × wal_writer_delay).
      const connection = yield* makeReservedConnection(
        config.recordSynchronousCommit ? {} : { onReserve: sql`SET synchronous_commit = off` }
      )
      const write = (batch: ReadonlyArray<Resolved>) =>
        withDeadline(connection.execute(turnStatement(sql, batch)), WRITE_DEADLINE_MS)

      const settle = (batch: ReadonlyArray<Resolved>) =>
        Effect.forEach(
          batch,
          ({ done, messageIds, jobId, profileId }) => Deferred.succeed(done, { profileId, messageIds, jobId }),
          { discard: true }
        )

      const lose = (batch: ReadonlyArray<Pending>, reason: TurnNotRecorded["reason"]) =>
        Effect.forEach(batch, ({ done }) => Deferred.fail(done, new TurnNotRecorded({ reason })), {
          discard: true
        }).pipe(Effect.andThen(Metric.update(lostFor(reason), batch.length)))

      /** Finds the profile of each turn that does not know it; a turn whose lookup is refused is lost. */
      const resolve = Effect.fnUntraced(function* (batch: ReadonlyArray<Pending>) {
        // One lookup per user, a few at a time (after an outage a batch may hold many users).
        const lookups = new Map<string, Turn>()
        for (const { turn } of batch) if (turn.profileId === undefined) lookups.set(userOf(turn), turn)
        const found = new Map(
          yield* Effect.forEach(
            lookups,
            ([user, { namespace, userId }]) =>
              Effect.map(
                Effect.exit(
                  Effect.map(profiles.getOrCreate(userId), ({ profile }) => profile.id).pipe(
                    Effect.provideService(CurrentNamespace, oneNamespace(namespace))
                  )
                ),
                (exit) => [user, exit] as const
              ),
            { concurrency: 8 }
          )
        )
        const resolved: Array<Resolved> = []
        for (const entry of batch) {
          const { profileId } = entry.turn
          if (profileId !== undefined) {
            resolved.push({ ...entry, profileId })
            continue
          }
          const exit = found.get(userOf(entry.turn))!
          if (Exit.isSuccess(exit)) resolved.push({ ...entry, profileId: exit.value })
          else if (isTransient(exit.cause)) return yield* Effect.failCause(exit.cause)
          else {
            yield* Effect.logError("a turn's profile could not be created; the turn is not recorded", exit.cause)
            yield* lose([entry], "refused")
          }
        }
        return resolved
      })

      /**
       * Writes one batch. If the database refuses it (a profile deleted meanwhile breaks its
       * turns' foreign key), each turn is tried alone so one bad turn does not lose the others.
       * Fails only when the database cannot be reached: then nothing of the batch is lost.
       */
      const writeBatch = Effect.fnUntraced(function* (batch: ReadonlyArray<Pending>) {
        const resolved = yield* resolve(batch)
        if (resolved.length === 0) return
        const result = yield* Effect.exit(write(resolved))
        if (Exit.isSuccess(result)) return yield* settle(resolved)
        if (isTransient(result.cause)) return yield* Effect.failCause(result.cause)
        for (const one of resolved) {
          const alone = yield* Effect.exit(write([one]))
          if (Exit.isSuccess(alone)) yield* settle([one])
          else if (isTransient(alone.cause)) return yield* Effect.failCause(alone.cause)
          else if (isForeignKeyViolation(alone.cause)) {
            yield* Effect.logWarning(
              `a turn of profile ${one.profileId} is not recorded: the profile was erased after the answer`
            )
            yield* lose([one], "profile_erased")
          } else {
            yield* Effect.logError("the database refused a turn; it is not recorded", alone.cause)
            yield* lose([one], "refused")
          }
        }
      })

      /**
       * Takes the next batch off the buffer; on failure the turns not yet settled go back in front.
       * Not interruptible: a write in flight finishes (within its deadline) and its turns are settled.
       */
      const flushOnce = Effect.uninterruptible(
        Effect.gen(function* () {
          const batch = pending.slice(0, nextBatchSize(pending))
          pending = pending.slice(batch.length)
          writingSince = performance.now()
          yield* writing.open
          const result = yield* Effect.exit(writeBatch(batch))
          writingSince = undefined
          yield* writing.close
          yield* Metric.update(turnsWaiting, pending.length)
          if (Exit.isSuccess(result)) {
            if (yield* Deferred.isDone(stalled)) stalled = yield* Deferred.make<void>()
            return true
          }
          yield* markStalled
          const unsettled: Array<Pending> = []
          for (const entry of batch) if (!(yield* Deferred.isDone(entry.done))) unsettled.push(entry)
          pending = [...unsettled, ...pending]
          yield* connection.drop
          yield* health.reportUnreachable
          yield* Effect.logWarning(
            `database unreachable; ${pending.length} answered turns wait in memory`,
            result.cause
          )
          return false
        })
      )

      // The writer: waits for turns, lets a batch gather, writes; while the database is away it
      // retries with backoff, keeping every turn.
      const writer = Effect.gen(function* () {
        yield* Deferred.await(wake)
        wake = yield* Deferred.make<void>()
        if (config.recordBatchMs > 0) yield* Effect.sleep(config.recordBatchMs)
        while (pending.length > 0) {
          yield* flushOnce.pipe(
            Effect.repeat({
              until: (written) => written,
              schedule: Schedule.min([Schedule.exponential("100 millis"), Schedule.spaced("2 seconds")])
            })
          )
        }
      }).pipe(Effect.forever)
      const writerFiber = yield* Effect.forkScoped(writer)

      // The watchdog: a write in flight past the request deadline stalls the writer (the answers
      // waiting for it go out, their turns stay in memory) and has the database probed. One fiber for
      // the process, asleep while nothing is written and woken once per deadline while writes go on:
      // a request pays no timer of its own.
      const watchdog = Effect.gen(function* () {
        yield* writing.await
        const since = writingSince
        if (since === undefined) return
        const left = config.requestTimeoutMs - (performance.now() - since)
        if (left > 0) return yield* Effect.sleep(left)
        if (!(yield* Deferred.isDone(stalled))) {
          yield* markStalled
          yield* health.suspect
        }
        // Until this write ends (or the next one starts).
        yield* Effect.sleep(config.requestTimeoutMs)
      }).pipe(Effect.forever)
      yield* Effect.forkScoped(watchdog)

      // On shutdown: the writer stops (after its write in flight), what is left gets a few more
      // seconds, then it is counted as lost.
      yield* Effect.addFinalizer(() =>
        Effect.gen(function* () {
          yield* Fiber.interrupt(writerFiber)
          yield* flushOnce.pipe(
            Effect.repeat({ while: () => pending.length > 0, schedule: Schedule.spaced("200 millis") }),
            Effect.timeoutOption(SHUTDOWN_FLUSH_MS)
          )
          if (pending.length > 0) {
            yield* Effect.logError(`${pending.length} answered turns could not be written before shutdown`)
            yield* lose(pending, "shutdown")
            pending = []
          }
        })
      )

      /**
       * The turn, or (while the turns waiting hold `MAX_WAITING_HELD_BYTES` of images and files already:
       * an outage) the turn without its held content, its digests kept: memory stays bounded in bytes.
       */
      const withinHeldBudget = (turn: Turn) =>
        Effect.gen(function* () {
          const own = heldBytes(turn)
          if (own === 0) return turn
          const waiting = pending.reduce((sum, entry) => sum + heldBytes(entry.turn), 0)
          if (waiting + own <= MAX_WAITING_HELD_BYTES) return turn
          yield* Effect.logWarning(
            `turns waiting to be written hold ${waiting} bytes of images and files: this turn's are not kept for extraction`
          )
          return {
            ...turn,
            messages: turn.messages.map((message) =>
              message.attachments === undefined
                ? message
                : {
                    ...message,
                    attachments: message.attachments.map((attachment) => ({
                      ...attachment,
                      url: null,
                      data: null,
                      text: null
                    }))
                  }
            )
          }
        })

      const submit = (turn: Turn) =>
        Effect.gen(function* () {
          const done = yield* Deferred.make<RecordedTurn, TurnNotRecorded>()
          if (turn.messages.length === 0) {
            // Nothing to write; a turn without a known profile has nothing to name either.
            if (turn.profileId !== undefined)
              yield* Deferred.succeed(done, { profileId: turn.profileId, messageIds: [], jobId: null })
            else yield* Deferred.fail(done, new TurnNotRecorded({ reason: "refused" }))
            return { written: Deferred.await(done), settled: Effect.asVoid(Deferred.await(done)) }
          }
          if (pending.length >= config.recordBufferTurns) {
            yield* Metric.update(lostFor("buffer_full"), 1)
            yield* Effect.logError(
              `turn buffer full (${config.recordBufferTurns} turns waiting): an answered turn is not recorded`
            )
            return yield* new TurnNotRecorded({ reason: "buffer_full" })
          }
          pending.push({
            turn: yield* withinHeldBudget(turn),
            messageIds: turn.messages.map(() => crypto.randomUUID()),
            jobId: turn.extract ? crypto.randomUUID() : null,
            done
          })
          yield* Metric.update(turnsWaiting, pending.length)
          yield* Deferred.succeed(wake, undefined)
          return {
            written: Deferred.await(done),
            settled: Effect.suspend(() =>
              Effect.raceFirst(Effect.asVoid(Deferred.await(done)), Deferred.await(stalled))
            )
          }
        })

      return TurnsRepo.of({ submit })
    })
  ).pipe(Layer.provide([Profiles.layer, DatabaseHealth.layer]))
}
