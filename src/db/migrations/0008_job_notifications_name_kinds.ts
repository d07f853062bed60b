import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // The notification names the kinds inserted, so only the loops that take them wake up (a turn's
  // extraction job does not make the embedding loop query the queue).
  yield* sql`
    CREATE OR REPLACE FUNCTION notify_extraction_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('extraction_jobs', (SELECT string_agg(DISTINCT kind, ',') FROM inserted));
      RETURN NULL;
    END $$`
  yield* sql`DROP TRIGGER extraction_jobs_notify ON extraction_jobs`
  yield* sql`
    CREATE TRIGGER extraction_jobs_notify AFTER INSERT ON extraction_jobs
      REFERENCING NEW TABLE AS inserted
      FOR EACH STATEMENT EXECUTE FUNCTION notify_extraction_jobs()`
})
