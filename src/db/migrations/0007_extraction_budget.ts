import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // A claim counts the jobs the candidate's profile ran in the last hour (its extraction budget):
  // newest first, only those a worker took, so it reads no more than the budget's worth of entries.
  yield* sql`
    CREATE INDEX extraction_jobs_budget_idx ON extraction_jobs (profile_id, updated_at DESC)
      WHERE kind <> 'embed' AND attempts > 0`
})
