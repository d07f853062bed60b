import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Schema } from "effect"
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

const Recorded = Schema.Struct({
  messageIds: Schema.NullOr(Schema.Array(Schema.String)),
  jobId: Schema.NullOr(Schema.String)
})

export class TurnStore extends Context.Service<TurnStore, {
  readonly record: (turn: Turn) => Effect.Effect<{ readonly messageIds: ReadonlyArray<string>; readonly jobId: string | null }>
}>()("gateway/store/TurnStore") {
  static readonly layer = Layer.effect(
    TurnStore,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient

      const record = Effect.fn("TurnStore.record")(function*(turn: Turn) {
        if (turn.messages.length === 0) return { messageIds: [], jobId: null }
        const rows = turn.messages.map((message, ord) => ({
          ord,
          role: message.role,
          content: message.content,
          tool_calls: message.toolCalls ?? null,
          tool_call_id: message.toolCallId
        }))
        // Messages of one turn get increasing timestamps, so they list in the order they were said.
        const result = yield* sql`
          WITH inserted AS (
            INSERT INTO messages (profile_id, role, content, tool_calls, tool_call_id, request_id, model, created_at)
            SELECT ${turn.profileId}, r.role, r.content, r.tool_calls, r.tool_call_id, ${turn.requestId}, ${turn.model},
                   now() + r.ord * interval '1 microsecond'
            FROM jsonb_to_recordset(${sql.json(rows)})
              AS r(ord int, role text, content text, tool_calls jsonb, tool_call_id text)
            RETURNING id, created_at
          ),
          job AS (
            INSERT INTO extraction_jobs (profile_id, message_ids, trait_definitions)
            SELECT ${turn.profileId}, array_agg(id ORDER BY created_at), ${sql.json(turn.requestTraits)}
            FROM inserted
            HAVING ${turn.extract}
            RETURNING id
          )
          SELECT (SELECT json_agg(id ORDER BY created_at) FROM inserted) AS message_ids,
                 (SELECT id::text FROM job) AS job_id`.pipe(Effect.orDie)
        const [recorded] = yield* Schema.decodeUnknownEffect(Schema.Array(Recorded))(result).pipe(Effect.orDie)
        return { messageIds: recorded?.messageIds ?? [], jobId: recorded?.jobId ?? null }
      })

      return TurnStore.of({ record })
    })
  )
}
