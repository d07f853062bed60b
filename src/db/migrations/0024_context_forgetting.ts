import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // A count instead of a time: a kept block goes back only when the profile's `forgetting` is the one
  // it was rendered under, so no clock (the database's or a replica's) decides what may hold a deleted
  // memory. A memory's text changing counts too: the old text may be what the user wanted gone.
  yield* sql`ALTER TABLE messages ADD COLUMN context_forgetting int`
  yield* sql`ALTER TABLE profiles ADD COLUMN forgetting int NOT NULL DEFAULT 0`
  // Blocks kept before this have no count and would never go back: cleared.
  yield* sql`
    UPDATE messages SET context_hash = NULL, context_block = NULL, context_chain = NULL
    WHERE context_hash IS NOT NULL`
  // `forgotten_at` is still set for replicas of the previous version during a rolling update.
  yield* sql`
    CREATE FUNCTION forget_kept_context(profile_ids uuid[]) RETURNS void LANGUAGE sql AS $$
      UPDATE profiles SET forgetting = forgetting + 1, forgotten_at = now() WHERE id = ANY(profile_ids);
      UPDATE messages SET context_hash = NULL, context_block = NULL, context_chain = NULL, context_forgetting = NULL
        WHERE profile_id = ANY(profile_ids) AND context_hash IS NOT NULL;
    $$`
  yield* sql`
    CREATE OR REPLACE FUNCTION note_profile_forgetting() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM forget_kept_context(ARRAY(SELECT DISTINCT profile_id FROM gone));
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE FUNCTION note_memory_rewritten() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM forget_kept_context(ARRAY[NEW.profile_id]);
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER memories_rewritten AFTER UPDATE OF content ON memories
      FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
      EXECUTE FUNCTION note_memory_rewritten()`
})
