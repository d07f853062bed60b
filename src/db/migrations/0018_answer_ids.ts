import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // The id an answer had for the client (the provider's, or the gateway's for a response it keeps):
  // a response id of the Responses API, kept by the provider, is found with its recorded turn.
  yield* sql`ALTER TABLE messages ADD COLUMN answer_id text CHECK (char_length(answer_id) BETWEEN 1 AND 200)`
})
