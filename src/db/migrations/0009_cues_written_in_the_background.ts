import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const migration = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // A memory written without cues (through the API or MCP) gets them from the extraction model
  // in a `cues` job; the flag marks those still waiting, so a job reads only them.
  yield* sql`ALTER TABLE memories ADD COLUMN cues_wanted boolean NOT NULL DEFAULT false`
  yield* sql`CREATE INDEX memories_cues_wanted_idx ON memories (profile_id) WHERE cues_wanted`
  yield* sql`ALTER TABLE extraction_jobs DROP CONSTRAINT extraction_jobs_kind_check`
  yield* sql`
    ALTER TABLE extraction_jobs ADD CONSTRAINT extraction_jobs_kind_check
      CHECK (kind IN ('turn', 'ingest', 'summary', 'embed', 'cues'))`
})
