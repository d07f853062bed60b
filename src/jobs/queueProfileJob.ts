import type { PgClient } from "@effect/sql-pg"
import type { Statement } from "effect/sql"
import type { JobKind } from "../domain/Job.ts"

/**
 * The statement part that queues a job of a kind that works through a whole profile (`embed`,
 * `cues`) unless one is already waiting (a running one may have read its batch already, so it does
 * not count). Used inside the statements that create or change memories, so the job exists exactly
 * when the change does.
 *
 * The waiting job is read `FOR SHARE`: a worker claiming it at this moment (its claim locks the row)
 * makes this statement wait and see the job running, so it queues a new one; and a worker that
 * comes while this change is uncommitted skips the job until it is (`SKIP LOCKED`), so it reads the
 * change. Without the lock a change committed just after a claim could be missed by both.
 */
export const queueProfileJob = (
  sql: PgClient.PgClient,
  kind: Extract<JobKind, "embed" | "cues">,
  profileId: string,
  condition: Statement.Fragment = sql`true`
) =>
  sql`INSERT INTO extraction_jobs (profile_id, kind, message_ids)
      SELECT ${profileId}, ${kind}, '{}'
      WHERE ${condition}
        AND NOT EXISTS (SELECT 1 FROM extraction_jobs WHERE profile_id = ${profileId} AND kind = ${kind} AND status = 'pending'
                        FOR SHARE)`
