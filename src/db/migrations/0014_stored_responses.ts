import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Responses API state the gateway keeps for providers that keep none (Anthropic through the
  // translation): each response with its own input items, so `previous_response_id` rebuilds the
  // conversation. Part of the profile: exported with it, erased with it.
  yield* sql`
    CREATE TABLE stored_responses (
      id                   text PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 200),
      profile_id           uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      previous_response_id text,
      input_items          jsonb NOT NULL CHECK (jsonb_typeof(input_items) = 'array'),
      response             jsonb NOT NULL CHECK (jsonb_typeof(response) = 'object'),
      created_at           timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX stored_responses_profile_idx ON stored_responses (profile_id, created_at)`
})
