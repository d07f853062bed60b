import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Jobs: what kind of work, its input, who holds it, what it produced.
  yield* sql`
    ALTER TABLE extraction_jobs
      ADD COLUMN kind        text NOT NULL DEFAULT 'turn' CHECK (kind IN ('turn', 'ingest', 'summary')),
      ADD COLUMN input       jsonb,
      ADD COLUMN locked_by   text,
      ADD COLUMN result      jsonb,
      ADD COLUMN finished_at timestamptz`
  yield* sql`DROP INDEX extraction_jobs_pending_idx`
  // Claiming looks for the oldest active job of a profile and for due pending jobs.
  yield* sql`
    CREATE INDEX extraction_jobs_active_idx ON extraction_jobs (profile_id, created_at)
      WHERE status IN ('pending', 'running')`
  yield* sql`CREATE INDEX extraction_jobs_due_idx ON extraction_jobs (run_after) WHERE status IN ('pending', 'running')`
  yield* sql`CREATE INDEX extraction_jobs_status_idx ON extraction_jobs (status, updated_at DESC)`
  // Workers LISTEN on this channel; a slow poll covers a missed notification.
  yield* sql`
    CREATE FUNCTION notify_extraction_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('extraction_jobs', '');
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER extraction_jobs_notify AFTER INSERT ON extraction_jobs
      FOR EACH STATEMENT EXECUTE FUNCTION notify_extraction_jobs()`

  // Every change of a trait's value, by hand or by extraction, with where it came from.
  yield* sql`
    CREATE TABLE trait_history (
      id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      profile_id  uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      key         text NOT NULL,
      old_value   jsonb,
      new_value   jsonb,
      confidence  double precision,
      source      text NOT NULL CHECK (source IN ('manual', 'extracted')),
      job_id      uuid,
      message_ids uuid[] NOT NULL DEFAULT '{}',
      created_at  timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX trait_history_lookup_idx ON trait_history (profile_id, key, id DESC)`

  // Every summary version; the profile row holds the latest.
  yield* sql`
    CREATE TABLE summary_history (
      profile_id uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      version    integer NOT NULL,
      summary    text NOT NULL,
      source     text NOT NULL CHECK (source IN ('manual', 'extracted')),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (profile_id, version)
    )`
  yield* sql`
    INSERT INTO summary_history (profile_id, version, summary, source, created_at)
    SELECT id, summary_version, summary, 'manual', coalesce(summary_updated_at, updated_at)
    FROM profiles WHERE summary IS NOT NULL AND summary_version > 0`
  // New information since the summary was written decides when it is rewritten.
  yield* sql`ALTER TABLE profiles ADD COLUMN changes_since_summary integer NOT NULL DEFAULT 0`

  // A repeated memory reinforces the stored one instead of becoming a duplicate.
  yield* sql`
    ALTER TABLE memories
      ADD COLUMN reinforced_at       timestamptz,
      ADD COLUMN reinforcement_count integer NOT NULL DEFAULT 0`
  yield* sql`CREATE INDEX memories_content_trgm_idx ON memories USING gin (content gin_trgm_ops)`
})
