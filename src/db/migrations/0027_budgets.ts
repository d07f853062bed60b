import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // A budget caps the tokens (or their cost) of a key, of a namespace, or of each user of a namespace,
  // per UTC day or month; what was spent is read from `usage_daily`.
  yield* sql`
    CREATE TABLE budgets (
      kind       text NOT NULL CHECK (kind IN ('key', 'namespace', 'user')),
      -- The key's id, or the namespace's name (for 'user': each user of that namespace).
      subject    text NOT NULL,
      namespace  text NOT NULL,
      tokens     bigint CHECK (tokens > 0),
      cost       numeric CHECK (cost > 0),
      period     text NOT NULL CHECK (period IN ('day', 'month')),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((tokens IS NULL) <> (cost IS NULL)),
      PRIMARY KEY (kind, subject)
    )`
})
