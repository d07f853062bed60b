import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // A turn whose streamed answer broke after it started: kept as far as it went, never extracted.
  yield* sql`ALTER TABLE messages ADD COLUMN incomplete boolean NOT NULL DEFAULT false`
})
