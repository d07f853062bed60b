import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Every process caches that a namespace has no shared profile (its requests then look for none): the
  // profile's creation tells them all, on the channel their snapshot caches listen to, by the namespace's
  // name (a profile id is never `shared:…`).
  yield* sql`
    CREATE FUNCTION notify_shared_profile_created() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('profile_changed', 'shared:' || NEW.namespace);
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER shared_profile_created AFTER INSERT ON profiles
      FOR EACH ROW WHEN (NEW.shared)
      EXECUTE FUNCTION notify_shared_profile_created()`
})
