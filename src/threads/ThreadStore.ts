import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Schema } from "effect"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"
import { Message } from "../domain/Message.ts"
import type { ProfileId } from "../domain/Profile.ts"
import { ToolCall } from "../openai/chat.ts"
import { decodeRows } from "../profiles/sqlResults.ts"
import type { ThreadMessage } from "./restoreThread.ts"

/** How many of a thread's latest messages a request reads at most to fill its budget. */
const MAX_RESTORED_MESSAGES = 500

const ThreadMessageRow = Schema.Struct({
  role: Schema.String,
  content: Schema.String,
  toolCalls: Schema.NullOr(Schema.Array(ToolCall)),
  toolCallId: Schema.NullOr(Schema.String)
})

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
export class ThreadStore extends Context.Service<
  ThreadStore,
  {
    /** The thread's latest messages, oldest first (at most `MAX_RESTORED_MESSAGES`). */
    readonly latest: (profileId: ProfileId, threadId: string) => Effect.Effect<ReadonlyArray<ThreadMessage>>
    /** The profile's threads, the most recently used first. */
    readonly list: (profileId: ProfileId) => Effect.Effect<ReadonlyArray<ThreadSummary>>
    /** Every message of one thread, oldest first. */
    readonly messages: (profileId: ProfileId, threadId: string) => Effect.Effect<ReadonlyArray<Message>>
  }
>()("gateway/threads/ThreadStore") {
  static readonly layer = Layer.effect(
    ThreadStore,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      return ThreadStore.of({
        latest: (profileId, threadId) =>
          sql`
            SELECT role, content, tool_calls, tool_call_id FROM (
              SELECT * FROM messages WHERE profile_id = ${profileId} AND thread_id = ${threadId}
              ORDER BY created_at DESC, id DESC LIMIT ${MAX_RESTORED_MESSAGES}
            ) latest ORDER BY created_at, id`.pipe(decodeRows(ThreadMessageRow), Effect.orDie),
        list: (profileId) =>
          sql`
            SELECT thread_id, count(*)::int AS messages, min(created_at) AS first_at, max(created_at) AS last_at
            FROM messages WHERE profile_id = ${profileId} AND thread_id IS NOT NULL
            GROUP BY thread_id ORDER BY max(created_at) DESC`.pipe(decodeRows(ThreadSummary), Effect.orDie),
        messages: (profileId, threadId) =>
          sql`
            SELECT id::text AS id, role, content, tool_calls, tool_call_id, created_at FROM messages
            WHERE profile_id = ${profileId} AND thread_id = ${threadId} ORDER BY created_at, id`.pipe(
            decodeRows(Message),
            Effect.orDie
          )
      })
    })
  )
}
