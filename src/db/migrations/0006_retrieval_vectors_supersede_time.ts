import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // When the remembered thing happened (events), and which newer memory replaced this one. A
  // superseded memory is never injected; deleting its successor makes it current again.
  // Cues: the situations and topics in which a memory matters, written by the extraction model
  // (or the caller), so a message that shares no word with the memory can still find it.
  yield* sql`
    ALTER TABLE memories
      ADD COLUMN cues          jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(cues) = 'array'),
      ADD COLUMN occurred_at   timestamptz,
      ADD COLUMN superseded_by uuid REFERENCES memories (id) ON DELETE SET NULL,
      ADD CONSTRAINT memories_not_self_superseded CHECK (superseded_by IS DISTINCT FROM id)`
  yield* sql`CREATE INDEX memories_superseded_by_idx ON memories (superseded_by) WHERE superseded_by IS NOT NULL`
  // One embedding per memory: int8 components (value = byte / scale of a unit vector), for the
  // model named and the text (content and cues) whose md5 is kept (an edited memory no longer
  // matches and is embedded again). bytea decodes fast; real[] goes through text.
  yield* sql`
    CREATE TABLE memory_vectors (
      memory_id    uuid PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
      profile_id   uuid NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
      model        text NOT NULL,
      dimensions   integer NOT NULL CHECK (dimensions > 0),
      content_hash text NOT NULL,
      scale        double precision NOT NULL CHECK (scale > 0),
      vector       bytea NOT NULL CHECK (length(vector) = dimensions),
      created_at   timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX memory_vectors_profile_idx ON memory_vectors (profile_id, model)`
  yield* sql`
    CREATE TRIGGER memory_vectors_changed AFTER INSERT OR UPDATE OR DELETE ON memory_vectors
      FOR EACH ROW EXECUTE FUNCTION notify_profile_changed()`
  // Superseding and the time of an event change what is injected: cached profiles must hear of it.
  yield* sql`DROP TRIGGER memories_changed ON memories`
  yield* sql`
    CREATE TRIGGER memories_changed AFTER UPDATE ON memories
      FOR EACH ROW
      WHEN ((OLD.content, OLD.cues, OLD.type, OLD.importance, OLD.decay_factor, OLD.reinforced_at, OLD.occurred_at,
             OLD.superseded_by)
            IS DISTINCT FROM
            (NEW.content, NEW.cues, NEW.type, NEW.importance, NEW.decay_factor, NEW.reinforced_at, NEW.occurred_at,
             NEW.superseded_by))
      EXECUTE FUNCTION notify_profile_changed()`
  // Repeats are now found in the process (spelling, meaning and names together), not by an index.
  yield* sql`DROP INDEX memories_content_trgm_idx`
  // Embedding memories is queued work too; it does not wait behind a profile's extraction jobs.
  yield* sql`ALTER TABLE extraction_jobs DROP CONSTRAINT extraction_jobs_kind_check`
  yield* sql`
    ALTER TABLE extraction_jobs ADD CONSTRAINT extraction_jobs_kind_check
      CHECK (kind IN ('turn', 'ingest', 'summary', 'embed'))`
})
