import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // A recorded turn keeps what the proxy saw: the request it came from and any tool calls.
  yield* sql`
    ALTER TABLE messages
      ADD COLUMN request_id   text,
      ADD COLUMN model        text,
      ADD COLUMN tool_calls   jsonb,
      ADD COLUMN tool_call_id text`
  // Relevance of a memory to the latest user message (ranking at injection).
  yield* sql`CREATE INDEX memories_content_fts_idx ON memories USING gin (to_tsvector('english', content))`
  // Durable queue of extraction work; a job is written in the same transaction as its turn.
  yield* sql`
    CREATE TABLE extraction_jobs (
      id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      profile_id        uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      status            text NOT NULL DEFAULT 'pending'
                          CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
      message_ids       uuid[] NOT NULL,
      trait_definitions jsonb NOT NULL DEFAULT '[]',
      attempts          integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
      run_after         timestamptz NOT NULL DEFAULT now(),
      locked_until      timestamptz,
      last_error        text,
      created_at        timestamptz NOT NULL DEFAULT now(),
      updated_at        timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX extraction_jobs_pending_idx ON extraction_jobs (run_after, created_at) WHERE status = 'pending'`
  yield* sql`CREATE INDEX extraction_jobs_profile_idx ON extraction_jobs (profile_id, created_at)`
})
