import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // An app's own labels on a memory (e.g. work / personal), to filter what is injected and searched.
  yield* sql`ALTER TABLE memories ADD COLUMN tags text[] NOT NULL DEFAULT '{}'`
  yield* sql`
    ALTER TABLE memories ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'
      CHECK (jsonb_typeof(metadata) = 'object')`
})
