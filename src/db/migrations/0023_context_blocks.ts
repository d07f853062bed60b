import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // The context a turn's request got at the end of its conversation, kept with the turn's answer by
  // the hash of the items before it: the next turn puts it back where it was, so the provider's cache
  // serves it too. Written in the turn's own statement; erased with the turn.
  yield* sql`
    ALTER TABLE messages
      ADD COLUMN context_hash  text CHECK (context_hash ~ '^[0-9a-f]{64}$'),
      ADD COLUMN context_block text,
      ADD COLUMN context_chain text[]`
  yield* sql`
    CREATE INDEX messages_context_idx ON messages (profile_id, context_hash) WHERE context_hash IS NOT NULL`
  // When a profile loses a memory or a trait, the context kept from before may hold what was deleted:
  // it is cleared, and `forgotten_at` tells replicas to drop what they hold in memory.
  yield* sql`ALTER TABLE profiles ADD COLUMN forgotten_at timestamptz`
  yield* sql`
    CREATE FUNCTION note_profile_forgetting() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE profiles SET forgotten_at = now() WHERE id IN (SELECT DISTINCT profile_id FROM gone);
      UPDATE messages SET context_hash = NULL, context_block = NULL, context_chain = NULL
        WHERE profile_id IN (SELECT DISTINCT profile_id FROM gone) AND context_hash IS NOT NULL;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER memories_forgotten AFTER DELETE ON memories REFERENCING OLD TABLE AS gone
      FOR EACH STATEMENT EXECUTE FUNCTION note_profile_forgetting()`
  yield* sql`
    CREATE TRIGGER traits_forgotten AFTER DELETE ON traits REFERENCING OLD TABLE AS gone
      FOR EACH STATEMENT EXECUTE FUNCTION note_profile_forgetting()`
})
