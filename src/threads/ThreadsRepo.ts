import { PgClient } from "@effect/sql-pg"
import { Context, DateTime, Effect, Layer, Schema } from "effect"
import { decodeRows } from "../db/sqlResults.ts"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"
import { Message } from "../domain/Message.ts"
import type { ProfileId } from "../domain/Profile.ts"
import { ToolCall } from "../providers/openai/chat.ts"
import type { ThreadDigest, ThreadMessage } from "./restoreThread.ts"

/** How many of a thread's latest messages a request reads at most to fill its budget. */
const MAX_RESTORED_MESSAGES = 500

const ThreadMessageRow = Schema.Struct({
  role: Schema.String,
  content: Schema.String,
  toolCalls: Schema.NullOr(Schema.Array(ToolCall)),
  toolCallId: Schema.NullOr(Schema.String),
  createdAt: Schema.DateTimeUtcFromDate
})

const DigestRow = Schema.Struct({ summary: Schema.String, summarizedUntil: Schema.DateTimeUtcFromDate })

/** A thread as listed: how long it is and when it was used. */
export const ThreadSummary = Schema.Struct({
  threadId: Schema.String,
  messages: Schema.Int,
  firstAt: Schema.DateTimeUtcFromDate,
  lastAt: Schema.DateTimeUtcFromDate
})
export type ThreadSummary = typeof ThreadSummary.Type

export class ThreadNotFound
  extends Schema.TaggedError<ThreadNotFound>()("ThreadNotFound", { threadId: Schema.String })
  implements ClientFacing<404>
{
  get clientError() {
    return clientError(404, "thread_not_found", `No thread '${this.threadId}' for this profile`)
  }
}

/**
 * The threads of a profile: the recorded messages that carry a thread id (`messages.thread_id`),
 * read by the profile's internal id.
 */
export class ThreadsRepo extends Context.Service<
  ThreadsRepo,
  {
    /** The thread's latest messages, oldest first (at most `MAX_RESTORED_MESSAGES`), and its summary if written. */
    readonly latest: (
      profileId: ProfileId,
      threadId: string
    ) => Effect.Effect<{ readonly messages: ReadonlyArray<ThreadMessage>; readonly digest: ThreadDigest | undefined }>
    /** Queues the rewriting of the thread's summary up to `until` (epoch ms); a rewrite that waits already is moved on to it. */
    readonly queueSummary: (profileId: ProfileId, threadId: string, until: number) => Effect.Effect<void>
    /** The summary as it is, and the messages after it up to `until`, oldest first (at most `limit`). */
    readonly unsummarized: (
      profileId: ProfileId,
      threadId: string,
      until: Date,
      limit: number
    ) => Effect.Effect<{ readonly digest: ThreadDigest | undefined; readonly messages: ReadonlyArray<ThreadMessage> }>
    /** Stores a newer summary (one covering less than the stored one is dropped). */
    readonly writeSummary: (profileId: ProfileId, threadId: string, digest: ThreadDigest) => Effect.Effect<void>
    /** The profile's threads, the most recently used first. */
    readonly list: (profileId: ProfileId) => Effect.Effect<ReadonlyArray<ThreadSummary>>
    /** Every message of one thread, oldest first. */
    readonly messages: (profileId: ProfileId, threadId: string) => Effect.Effect<ReadonlyArray<Message>>
  }
>()("gateway/threads/ThreadsRepo") {
  static readonly layer = Layer.effect(
    ThreadsRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const threadMessages = decodeRows(ThreadMessageRow)
      const asThreadMessage = (row: typeof ThreadMessageRow.Type): ThreadMessage => ({
        ...row,
        createdAt: DateTime.toEpochMillis(row.createdAt)
      })
      const digestOf = (rows: ReadonlyArray<typeof DigestRow.Type>): ThreadDigest | undefined =>
        rows[0] === undefined
          ? undefined
          : { text: rows[0].summary, until: DateTime.toEpochMillis(rows[0].summarizedUntil) }
      const digest = (profileId: ProfileId, threadId: string) =>
        sql`SELECT summary, summarized_until FROM thread_summaries WHERE profile_id = ${profileId} AND thread_id = ${threadId}`.pipe(
          decodeRows(DigestRow),
          Effect.orDie,
          Effect.map(digestOf)
        )
      return ThreadsRepo.of({
        latest: (profileId, threadId) =>
          Effect.all(
            {
              messages: sql`
                SELECT role, content, tool_calls, tool_call_id, created_at FROM (
                  SELECT * FROM messages WHERE profile_id = ${profileId} AND thread_id = ${threadId}
                  ORDER BY created_at DESC, id DESC LIMIT ${MAX_RESTORED_MESSAGES}
                ) latest ORDER BY created_at, id`.pipe(
                threadMessages,
                Effect.orDie,
                Effect.map((rows) => rows.map(asThreadMessage))
              ),
              digest: digest(profileId, threadId)
            },
            { concurrency: 2 }
          ),
        // A rewrite that waits already is moved on to the newer cut, so it is not written up to a stale one.
        queueSummary: (profileId, threadId, until) =>
          // One pending summary a thread: requests of a thread arriving together queue it one at a time
          // (the lock is held to the commit, and the next statement's snapshot sees what the other added).
          sql`SELECT pg_advisory_xact_lock(hashtextextended(${`thread-summary:${profileId}:${threadId}`}, 0))`.pipe(
            Effect.andThen(sql`
            WITH moved AS (
              UPDATE extraction_jobs SET input = jsonb_set(input, '{until}', to_jsonb(${new Date(until).toISOString()}::text))
              WHERE profile_id = ${profileId} AND kind = 'thread' AND status = 'pending'
                AND input->>'threadId' = ${threadId} AND (input->>'until')::timestamptz < ${new Date(until)}
              RETURNING id
            )
            INSERT INTO extraction_jobs (profile_id, kind, message_ids, input)
            SELECT ${profileId}, 'thread', '{}', ${sql.json({ threadId, until: new Date(until).toISOString() })}
            WHERE NOT EXISTS (
              SELECT 1 FROM extraction_jobs WHERE profile_id = ${profileId} AND kind = 'thread' AND status = 'pending'
                AND input->>'threadId' = ${threadId})`),
            sql.withTransaction,
            Effect.orDie,
            Effect.asVoid
          ),
        unsummarized: (profileId, threadId, until, limit) =>
          Effect.gen(function* () {
            const current = yield* digest(profileId, threadId)
            // Times are compared in whole milliseconds, as they are read (and as a restore chose the cut):
            // a message recorded at 12.345678 s is at 12.345 s, so a bound of 12.345 covers it.
            const after = current === undefined ? new Date(0) : new Date(current.until + 1)
            const before = new Date(until.getTime() + 1)
            const messages = yield* sql`
              SELECT role, content, tool_calls, tool_call_id, created_at FROM messages
              WHERE profile_id = ${profileId} AND thread_id = ${threadId} AND created_at >= ${after} AND created_at < ${before}
              ORDER BY created_at, id LIMIT ${limit}`.pipe(threadMessages, Effect.orDie)
            return { digest: current, messages: messages.map(asThreadMessage) }
          }),
        writeSummary: (profileId, threadId, written) =>
          sql`
            INSERT INTO thread_summaries AS t (profile_id, thread_id, summary, summarized_until)
            VALUES (${profileId}, ${threadId}, ${written.text}, ${new Date(written.until)})
            ON CONFLICT (profile_id, thread_id) DO UPDATE
              SET summary = excluded.summary, summarized_until = excluded.summarized_until, updated_at = now()
              WHERE t.summarized_until < excluded.summarized_until`.pipe(Effect.orDie, Effect.asVoid),
        list: (profileId) =>
          sql`
            SELECT thread_id, count(*)::int AS messages, min(created_at) AS first_at, max(created_at) AS last_at
            FROM messages WHERE profile_id = ${profileId} AND thread_id IS NOT NULL
            GROUP BY thread_id ORDER BY max(created_at) DESC`.pipe(decodeRows(ThreadSummary), Effect.orDie),
        messages: (profileId, threadId) =>
          sql`
            SELECT id::text AS id, role, content, tool_calls, tool_call_id, thread_id, answer_id, incomplete, created_at FROM messages
            WHERE profile_id = ${profileId} AND thread_id = ${threadId} ORDER BY created_at, id`.pipe(
            decodeRows(Message),
            Effect.orDie
          )
      })
    })
  )

  /** The live store on the database you provide: it reads by the profile's internal id, so it needs only a `PgClient`. */
  static readonly layerTest = ThreadsRepo.layer
}
