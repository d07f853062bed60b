import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Every gateway process caches profile snapshots and drops one when this channel names it.
  yield* sql`
    CREATE FUNCTION notify_profile_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('profile_changed', (CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END).profile_id::text);
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE FUNCTION notify_profile_row_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('profile_changed', (CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END).id::text);
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER traits_changed AFTER INSERT OR UPDATE OR DELETE ON traits
      FOR EACH ROW EXECUTE FUNCTION notify_profile_changed()`
  yield* sql`
    CREATE TRIGGER memories_added_or_removed AFTER INSERT OR DELETE ON memories
      FOR EACH ROW EXECUTE FUNCTION notify_profile_changed()`
  // Marking a memory as used is not a change worth a notification (it happens on every request).
  yield* sql`
    CREATE TRIGGER memories_changed AFTER UPDATE ON memories
      FOR EACH ROW
      WHEN ((OLD.content, OLD.type, OLD.importance, OLD.decay_factor, OLD.reinforced_at)
            IS DISTINCT FROM (NEW.content, NEW.type, NEW.importance, NEW.decay_factor, NEW.reinforced_at))
      EXECUTE FUNCTION notify_profile_changed()`
  yield* sql`
    CREATE TRIGGER profiles_changed AFTER UPDATE ON profiles
      FOR EACH ROW
      WHEN (OLD.summary IS DISTINCT FROM NEW.summary OR OLD.external_id IS DISTINCT FROM NEW.external_id)
      EXECUTE FUNCTION notify_profile_row_changed()`
  yield* sql`
    CREATE TRIGGER profiles_deleted AFTER DELETE ON profiles
      FOR EACH ROW EXECUTE FUNCTION notify_profile_row_changed()`
  // Relevance is computed from lexemes read with the snapshot; the full-text index is not used.
  yield* sql`DROP INDEX memories_content_fts_idx`
})
