import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // The key held in the database, bound to a provider key, whose request made a turn: the turn's
  // extraction goes with that provider key. No foreign key: a job keeps naming a key whose row is
  // gone, and then fails rather than fall back to the operator's key (docs/learning.md).
  yield* sql`ALTER TABLE extraction_jobs ADD COLUMN key_id uuid`
})
