import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Kept Responses state goes back to the provider on the next turn: `json` keeps its text as it was
  // sent (jsonb reorders keys), so the provider sees the bytes it has cached.
  yield* sql`
    ALTER TABLE stored_responses
      DROP CONSTRAINT stored_responses_input_items_check,
      DROP CONSTRAINT stored_responses_response_check,
      ALTER COLUMN input_items TYPE json,
      ALTER COLUMN response TYPE json,
      ADD CHECK (json_typeof(input_items) = 'array'),
      ADD CHECK (json_typeof(response) = 'object')`
  yield* sql`
    ALTER TABLE conversation_items
      DROP CONSTRAINT conversation_items_item_check,
      ALTER COLUMN item TYPE json,
      ADD CHECK (json_typeof(item) = 'object')`
})
