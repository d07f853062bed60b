import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // A provider's response id is unique per user, not across the database: a provider that reuses an
  // id (or two users whose providers coincide) must not lose one user's response to another's.
  yield* sql`ALTER TABLE stored_responses DROP CONSTRAINT stored_responses_pkey`
  yield* sql`ALTER TABLE stored_responses ADD PRIMARY KEY (profile_id, id)`
  // What each conversation holds, in bytes of its items and metadata: the per-user limit reads it.
  yield* sql`ALTER TABLE conversations ADD COLUMN size_bytes bigint NOT NULL DEFAULT 0`
  yield* sql`
    UPDATE conversations c SET size_bytes = octet_length(c.metadata::text) + coalesce(
      (SELECT sum(octet_length(i.item::text)) FROM conversation_items i WHERE i.conversation_id = c.id), 0)`
})
