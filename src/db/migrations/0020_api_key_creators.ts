import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // The key held in the database that created a key (NULL: the environment's admin key): a key never
  // outgrows its creator, and revoking a key revokes the keys it created. Keys are never deleted.
  yield* sql`ALTER TABLE api_keys ADD COLUMN created_by uuid REFERENCES api_keys (id)`
  yield* sql`CREATE INDEX api_keys_created_by_idx ON api_keys (created_by) WHERE created_by IS NOT NULL`
})
