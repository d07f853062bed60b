import { PgClient } from "@effect/sql-pg"
import { Context, Deferred, Effect, Exit, Layer, Semaphore } from "effect"
import type { SqlError } from "effect/sql"
import { AppConfig } from "../config/AppConfig.ts"
import type { MessageRole } from "../domain/Message.ts"
import type { ProfileId } from "../domain/Profile.ts"
import type { PerRequestTrait } from "../traits/PerRequestTrait.ts"

export interface TurnMessage {
  readonly role: MessageRole
  readonly content: string
  readonly toolCalls: unknown
  readonly toolCallId: string | null
}

/** One exchange: the new input messages of a request and the assistant's reply. */
export interface Turn {
  readonly profileId: ProfileId
  readonly requestId: string
  readonly model: string
  readonly messages: ReadonlyArray<TurnMessage>
  /** Write an extraction job for the turn (in the same statement, so both or neither exist). */
  readonly extract: boolean
  /** Per-request trait declarations, kept with the job so extraction honours them later. */
  readonly requestTraits: ReadonlyArray<PerRequestTrait>
}

export interface RecordedTurn {
  readonly messageIds: ReadonlyArray<string>
  readonly jobId: string | null
}

/** A turn waiting for the next write, with the ids it will be stored under. */
interface Pending {
  readonly turn: Turn
  readonly messageIds: ReadonlyArray<string>
  readonly jobId: string | null
  readonly done: Deferred.Deferred<RecordedTurn, SqlError.SqlError>
}

/**
 * Writes finished turns. Turns are group-committed: each write is one statement for every turn
 * waiting (messages and extraction jobs together, so a turn's job exists exactly when its messages
 * do), and turns that finish while a write is in flight, or within `RECORD_BATCH_MS` of the first,
 * share the next one. Under load that is one database round trip for many requests instead of one each.
 */
export class TurnStore extends Context.Service<TurnStore, {
  /** Stores the turn; completes once it is in the database. */
  readonly record: (turn: Turn) => Effect.Effect<RecordedTurn>
}>()("gateway/store/TurnStore") {
  static readonly layer = Layer.effect(
    TurnStore,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const batchMs = (yield* AppConfig).recordBatchMs
      const writing = yield* Semaphore.make(1)
      let pending: Array<Pending> = []
      let leaderWaiting = false

      /** One statement for all the turns; ids are chosen here, so nothing needs to be read back. */
      const write = (batch: ReadonlyArray<Pending>) => {
        let sequence = 0
        // Messages get increasing timestamps in the order they were said, across the whole batch.
        const messages = batch.flatMap(({ turn, messageIds }) =>
          turn.messages.map((message, ord) => ({
            id: messageIds[ord],
            seq: sequence++,
            profile_id: turn.profileId,
            role: message.role,
            content: message.content,
            tool_calls: message.toolCalls ?? null,
            tool_call_id: message.toolCallId,
            request_id: turn.requestId,
            model: turn.model
          }))
        )
        // Jobs of one batch keep the order of their turns (a profile's jobs run oldest first).
        const jobs = batch.flatMap(({ turn, messageIds, jobId }, index) =>
          jobId === null
            ? []
            : [{ id: jobId, seq: index, profile_id: turn.profileId, message_ids: messageIds, trait_definitions: turn.requestTraits }]
        )
        return sql`
          WITH inserted AS (
            INSERT INTO messages (id, profile_id, role, content, tool_calls, tool_call_id, request_id, model, created_at)
            SELECT r.id, r.profile_id, r.role, r.content, r.tool_calls, r.tool_call_id, r.request_id, r.model,
                   now() + r.seq * interval '1 microsecond'
            FROM jsonb_to_recordset(${sql.json(messages)})
              AS r(id uuid, seq int, profile_id uuid, role text, content text, tool_calls jsonb, tool_call_id text,
                   request_id text, model text)
          )
          INSERT INTO extraction_jobs (id, profile_id, message_ids, trait_definitions, created_at)
          SELECT r.id, r.profile_id, ARRAY(SELECT jsonb_array_elements_text(r.message_ids)::uuid), r.trait_definitions,
                 now() + r.seq * interval '1 microsecond'
          FROM jsonb_to_recordset(${sql.json(jobs)})
            AS r(id uuid, seq int, profile_id uuid, message_ids jsonb, trait_definitions jsonb)`
      }

      const settle = (batch: ReadonlyArray<Pending>) =>
        Effect.forEach(batch, ({ done, messageIds, jobId }) => Deferred.succeed(done, { messageIds, jobId }), {
          discard: true
        })

      /**
       * Writes everything waiting. If the batch fails (a profile deleted meanwhile breaks its
       * turns' foreign key), each turn is retried alone so one bad turn does not lose the others.
       */
      const flush = Effect.gen(function*() {
        leaderWaiting = false
        const batch = pending
        pending = []
        if (batch.length === 0) return
        const result = yield* Effect.exit(write(batch))
        if (Exit.isSuccess(result)) return yield* settle(batch)
        if (batch.length === 1) return yield* Deferred.failCause(batch[0]!.done, result.cause)
        yield* Effect.forEach(batch, (one) =>
          Effect.exit(write([one])).pipe(
            Effect.flatMap((alone) => Exit.isSuccess(alone) ? settle([one]) : Deferred.failCause(one.done, alone.cause))
          ), { discard: true })
      })

      const record = Effect.fnUntraced(function*(turn: Turn) {
        if (turn.messages.length === 0) return { messageIds: [], jobId: null }
        const done = yield* Deferred.make<RecordedTurn, SqlError.SqlError>()
        pending.push({
          turn,
          messageIds: turn.messages.map(() => crypto.randomUUID()),
          jobId: turn.extract ? crypto.randomUUID() : null,
          done
        })
        if (!leaderWaiting) {
          // This caller writes the batch; uninterruptible so the turns that joined it are not lost.
          leaderWaiting = true
          yield* Effect.uninterruptible(
            Effect.sleep(batchMs).pipe(Effect.andThen(writing.withPermit(flush)))
          )
        }
        return yield* Deferred.await(done)
      }, Effect.orDie)

      return TurnStore.of({ record })
    })
  )
}
