import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Every profile belongs to one namespace (an app); existing ones to `default`. A user id is
  // unique within its namespace. Reverting (docs/auth.md) needs the user ids unique again.
  yield* sql`
    ALTER TABLE profiles ADD COLUMN namespace text NOT NULL DEFAULT 'default'
      CHECK (namespace ~ '^[a-z0-9][a-z0-9_-]{0,62}$')`
  yield* sql`ALTER TABLE profiles DROP CONSTRAINT profiles_external_id_key`
  yield* sql`ALTER TABLE profiles ADD CONSTRAINT profiles_namespace_external_id_key UNIQUE (namespace, external_id)`
  yield* sql`CREATE INDEX profiles_namespace_listing_idx ON profiles (namespace, created_at DESC, id DESC)`
})
