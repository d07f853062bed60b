import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // A thread's rolling summary: its turns up to summarized_until, in a few paragraphs, written by a
  // `thread` job of the extraction worker when turns no longer fit the restore budget.
  yield* sql`
    CREATE TABLE thread_summaries (
      profile_id       uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      thread_id        text NOT NULL,
      summary          text NOT NULL CHECK (char_length(summary) <= 20000),
      summarized_until timestamptz NOT NULL,
      updated_at       timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (profile_id, thread_id)
    )`
  yield* sql`ALTER TABLE extraction_jobs DROP CONSTRAINT extraction_jobs_kind_check`
  yield* sql`
    ALTER TABLE extraction_jobs ADD CONSTRAINT extraction_jobs_kind_check
      CHECK (kind IN ('turn', 'ingest', 'summary', 'embed', 'cues', 'webhook', 'thread'))`
})
