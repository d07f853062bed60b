import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Plugins add trait value types: the column keeps a well-formed type name, whichever it is.
  yield* sql`ALTER TABLE traits DROP CONSTRAINT traits_value_type_check`
  yield* sql`ALTER TABLE traits ADD CONSTRAINT traits_value_type_check CHECK (value_type ~ '^[a-z][a-z0-9_-]{0,31}$')`
})
