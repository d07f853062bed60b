import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // The Conversations API, where the gateway keeps the state: a user's conversation and its items in
  // order (an item already there, by id, is not added twice). Part of the profile, like its responses.
  yield* sql`
    CREATE TABLE conversations (
      id         text PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 200),
      profile_id uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      metadata   jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX conversations_profile_idx ON conversations (profile_id, created_at)`
  yield* sql`
    CREATE TABLE conversation_items (
      conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
      id              text NOT NULL CHECK (char_length(id) BETWEEN 1 AND 200),
      position        bigserial,
      item            jsonb NOT NULL CHECK (jsonb_typeof(item) = 'object'),
      created_at      timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (conversation_id, id)
    )`
  yield* sql`CREATE INDEX conversation_items_order_idx ON conversation_items (conversation_id, position)`
})
