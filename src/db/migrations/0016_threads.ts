import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // A chat turn may belong to a thread the gateway keeps (X-Service-Thread-Id): its messages restore
  // the thread's history for a client that sends only its new messages.
  yield* sql`ALTER TABLE messages ADD COLUMN thread_id text CHECK (char_length(thread_id) BETWEEN 1 AND 200)`
  yield* sql`
    CREATE INDEX messages_thread_idx ON messages (profile_id, thread_id, created_at DESC, id DESC)
      WHERE thread_id IS NOT NULL`
})
