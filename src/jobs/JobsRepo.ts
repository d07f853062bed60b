import { PgClient } from "@effect/sql-pg"
import { Context, type DateTime, Effect, Layer, Option, Schema } from "effect"
import type { Statement } from "effect/sql"
import { Job, JobKind, type JobStatus, jobRecordFields } from "../domain/Job.ts"
import { currentNamespace } from "../domain/Namespace.ts"
import { PerRequestTrait } from "../domain/PerRequestTrait.ts"
import { ProfileId } from "../domain/Profile.ts"
import { WebhookEvent } from "../domain/WebhookEvent.ts"

/** A job of a profile a worker holds, with what it needs to run. */
export class ClaimedJob extends Schema.Class<ClaimedJob>("ClaimedJob")({
  ...jobRecordFields,
  // Decoded here, once: every handler of a profile's work gets its id typed.
  profileId: ProfileId,
  messageIds: Schema.Array(Schema.String),
  traitDefinitions: Schema.Array(PerRequestTrait),
  /** An ingest's text, or the thread whose summary a `thread` job rewrites and up to when (ISO time). */
  input: Schema.NullOr(
    Schema.Union([
      Schema.Struct({ data: Schema.String, source: Schema.NullOr(Schema.String) }),
      Schema.Struct({ threadId: Schema.String, until: Schema.String })
    ])
  ),
  /** A turn's: the key bound to a provider key whose request made it (`null`: any other key, or none). */
  keyId: Schema.NullOr(Schema.String)
}) {}

/** A webhook delivery a worker holds: its event, and the webhook it goes to. */
export class ClaimedDelivery extends Schema.Class<ClaimedDelivery>("ClaimedDelivery")({
  id: Schema.String,
  kind: JobKind,
  attempts: Schema.Int,
  webhookId: Schema.String,
  input: WebhookEvent
}) {}

/** What one claim attempt did: took a job, or put one back because its profile's budget is spent. */
export type ClaimAttempt =
  | { readonly _tag: "Claimed"; readonly job: ClaimedJob }
  | {
      readonly _tag: "Deferred"
      readonly jobId: string
      readonly profileId: string | null
      readonly runAfter: DateTime.Utc
    }

export interface JobCounts {
  readonly counts: ReadonlyArray<{ readonly status: string; readonly count: number }>
  readonly oldestPendingSeconds: number | null
}

const Counts = Schema.Array(Schema.Struct({ status: Schema.String, count: Schema.Int }))
const OldestPending = Schema.Array(Schema.Struct({ seconds: Schema.NullOr(Schema.Number) }))
const Backlog = Schema.Array(
  Schema.Struct({ pending: Schema.Int, running: Schema.Int, seconds: Schema.NullOr(Schema.Number) })
)
const NextDue = Schema.Array(Schema.Struct({ ms: Schema.NullOr(Schema.Number) }))
const InFlight = Schema.Array(Schema.Struct({ count: Schema.Int }))
const ClaimOutcome = Schema.Struct({
  deferred: Schema.Boolean,
  id: Schema.String,
  profileId: Schema.NullOr(Schema.String),
  runAfter: Schema.DateTimeUtcFromDate
})

/** Marks the note a deferral leaves in `last_error`, so a later deferral replaces it but not a real error. */
const DEFERRED = "deferred:"

const deferralNote = (perHour: number) =>
  `${DEFERRED} this profile started ${perHour} extraction jobs in the last hour ` +
  "(EXTRACTION_JOBS_PER_PROFILE_PER_HOUR); it runs at run_after"

/**
 * The SQL of the extraction queue (`extraction_jobs`): statements in, decoded rows out. Every time
 * here is the database's `now()` (see `JobQueue` for why). A database failure is a defect.
 */
export class JobsRepo extends Context.Service<
  JobsRepo,
  {
    readonly insertIngest: (profileId: ProfileId, data: string, source: string | null) => Effect.Effect<Job>
    readonly claimOnce: (
      workerId: string,
      leaseMs: number,
      kinds: ReadonlyArray<JobKind>,
      perHour: number
    ) => Effect.Effect<Option.Option<ClaimAttempt>>
    /**
     * Takes the next due webhook delivery at the head of its line whose webhook has fewer than
     * `below` deliveries in flight (as this statement saw them: see `deliveriesInFlight`).
     */
    readonly claimDelivery: (
      workerId: string,
      leaseMs: number,
      below: number
    ) => Effect.Effect<Option.Option<ClaimedDelivery>>
    /** The webhook's deliveries in flight (running on a live lease) other than `besides`, as committed now. */
    readonly deliveriesInFlight: (webhookId: string, besides: string) => Effect.Effect<number>
    /** False when the worker no longer holds the job (its lease was taken over). */
    readonly extendLease: (jobId: string, workerId: string, leaseMs: number) => Effect.Effect<boolean>
    /** False when the worker no longer holds the job: nothing was marked. */
    readonly markSucceeded: (jobId: string, workerId: string, result: unknown) => Effect.Effect<boolean>
    readonly markPending: (jobId: string, workerId: string, error: string, delayMs: number) => Effect.Effect<void>
    readonly markFailed: (jobId: string, workerId: string, error: string) => Effect.Effect<void>
    readonly putBack: (jobId: string, workerId: string) => Effect.Effect<void>
    readonly nextDueInMs: (kinds: ReadonlyArray<JobKind>) => Effect.Effect<Option.Option<number>>
    /** The same for deliveries, leaving out those of webhooks with `maxInFlight` deliveries in flight. */
    readonly nextDeliveryDueInMs: (maxInFlight: number) => Effect.Effect<Option.Option<number>>
    readonly findById: (jobId: string) => Effect.Effect<Option.Option<Job>>
    /** A failed job back in the queue with its attempts anew, the workers told at once; `None` unless it had failed. */
    readonly requeueFailed: (jobId: string) => Effect.Effect<Option.Option<Job>>
    readonly counts: Effect.Effect<JobCounts>
    readonly latest: (status: JobStatus, limit: number) => Effect.Effect<ReadonlyArray<Job>>
    readonly backlog: Effect.Effect<{
      readonly pending: number
      readonly running: number
      readonly oldestPendingSeconds: number
    }>
  }
>()("gateway/jobs/JobsRepo") {
  static readonly layer = Layer.effect(
    JobsRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const decodeJobs = Schema.decodeUnknownEffect(Schema.Array(Job))
      const decodeClaimed = Schema.decodeUnknownEffect(Schema.Array(ClaimedJob))

      /** Jobs as operators see them, with their user (a delivery's: its event's, kept past an erasure) and why they wait. */
      const jobsAsSeen = (rows: Statement.Fragment, where: Statement.Fragment) => sql`
        SELECT j.*,
               CASE WHEN j.kind = 'webhook' THEN j.input->'profile'->>'externalId' ELSE p.external_id END AS external_id,
               CASE WHEN j.status <> 'pending' THEN NULL
                    WHEN starts_with(coalesce(j.last_error, ''), ${DEFERRED}) THEN 'deferred'
                    WHEN j.attempts > 0 THEN 'retrying'
                    ELSE 'queued' END AS wait_reason
        FROM ${rows} j LEFT JOIN profiles p ON p.id = j.profile_id
        WHERE ${where}`

      /**
       * Jobs that head their profile's line: the oldest unfinished job of the same profile in the same
       * line. Embedding has a line of its own: it only writes vectors, so it never waits behind (or
       * holds up) a profile's extraction jobs. Written as one index probe per job (not `NOT EXISTS`
       * over older ones, which the planner ran as a join quadratic in a profile's backlog: 7.8 s for
       * `nextDueInMs` with 10,000 queued jobs of one profile, 70 ms this way).
       */
      const headOfProfileLine = sql`j.id = (
        SELECT e.id FROM extraction_jobs e
        WHERE e.profile_id = j.profile_id AND e.status IN ('pending', 'running')
          AND (e.kind = 'embed') = (j.kind = 'embed')
        ORDER BY e.created_at, e.id
        LIMIT 1)`

      /** Webhook deliveries head theirs: one webhook's events about one profile, in the order they happened. */
      const headOfDeliveryLine = sql`j.id = (
        SELECT e.id FROM extraction_jobs e
        WHERE e.kind = 'webhook' AND e.webhook_id = j.webhook_id AND e.subject_id = j.subject_id
          AND e.status IN ('pending', 'running')
        ORDER BY e.event_seq
        LIMIT 1)`

      const ofKinds = (kinds: ReadonlyArray<JobKind>) =>
        sql`j.kind IN (SELECT jsonb_array_elements_text(${sql.json(kinds)}))`

      /**
       * Webhooks with `n` or more deliveries in flight: running on a live lease (one whose lease ran out belongs
       * to a replica that is gone, and is taken over like any due delivery). Read from the few running jobs.
       */
      const webhooksWithInFlight = (n: number) => sql`(
        SELECT r.webhook_id FROM extraction_jobs r
        WHERE r.status = 'running' AND r.kind = 'webhook' AND r.locked_until >= now()
        GROUP BY r.webhook_id HAVING count(*) >= ${n})`

      const insertIngest = (profileId: ProfileId, data: string, source: string | null) =>
        sql`
          WITH inserted AS (
            INSERT INTO extraction_jobs (profile_id, kind, message_ids, input)
            VALUES (${profileId}, 'ingest', '{}', ${sql.json({ data, source })})
            RETURNING *)
          ${jobsAsSeen(sql`inserted`, sql`true`)}`.pipe(
          Effect.flatMap(decodeJobs),
          Effect.orDie,
          Effect.map((jobs) => jobs[0]!)
        )

      /**
       * When the candidate's profile gets a slot back, if its budget is spent: the moment the
       * budget-th most recent job it ran leaves the hour (NULL: within budget). Jobs "ran" when a
       * worker took them (attempts > 0), dated by their last change (claim, retry or finish); the
       * candidate itself is left out, so a job taken over after a lost lease is not counted twice.
       * Reads at most `perHour` entries of `extraction_jobs_budget_idx`.
       */
      const freesAt = (perHour: number) =>
        perHour === 0
          ? sql`NULL::timestamptz`
          : sql`(CASE WHEN c.kind = 'embed' THEN NULL ELSE (
              SELECT s.updated_at + interval '1 hour' FROM extraction_jobs s
              WHERE s.profile_id = c.profile_id AND s.kind <> 'embed' AND s.attempts > 0
                AND s.updated_at > now() - interval '1 hour' AND s.id <> c.id
              ORDER BY s.updated_at DESC
              OFFSET ${perHour - 1} LIMIT 1) END)`

      /**
       * Takes the next due job at the head of its line (and matching `among`, ordered by `order`), or
       * defers it when its profile's budget is spent: the row as it is now, with `deferred`.
       */
      const leaseNext = (
        workerId: string,
        leaseMs: number,
        kinds: ReadonlyArray<JobKind>,
        headOfLine: Statement.Fragment,
        perHour: number,
        among: Statement.Fragment = sql`true`,
        order: Statement.Fragment = sql`j.run_after, j.created_at`
      ) =>
        sql`
          WITH candidate AS (
            SELECT j.id, j.profile_id, j.kind FROM extraction_jobs j
            WHERE ((j.status = 'pending' AND j.run_after <= now()) OR (j.status = 'running' AND j.locked_until < now()))
              AND ${ofKinds(kinds)} AND ${headOfLine} AND ${among}
            ORDER BY ${order}
            LIMIT 1
            FOR UPDATE OF j SKIP LOCKED
          ), budget AS (
            SELECT c.id, ${freesAt(perHour)} AS frees_at FROM candidate c
          )
          UPDATE extraction_jobs
          SET status = CASE WHEN b.frees_at IS NULL THEN 'running' ELSE 'pending' END,
              attempts = attempts + CASE WHEN b.frees_at IS NULL THEN 1 ELSE 0 END,
              locked_by = CASE WHEN b.frees_at IS NULL THEN ${workerId} END,
              locked_until = CASE WHEN b.frees_at IS NULL THEN now() + ${leaseMs} * interval '1 millisecond' END,
              run_after = coalesce(b.frees_at, extraction_jobs.run_after),
              -- A deferral says why in last_error, unless that holds a real error of an earlier attempt;
              -- a claim clears a deferral's note (the job no longer waits for that).
              last_error = CASE
                WHEN b.frees_at IS NULL
                  THEN CASE WHEN starts_with(coalesce(extraction_jobs.last_error, ''), ${DEFERRED})
                    THEN NULL ELSE extraction_jobs.last_error END
                WHEN starts_with(coalesce(extraction_jobs.last_error, ${DEFERRED}), ${DEFERRED})
                  THEN ${deferralNote(perHour)}
                ELSE extraction_jobs.last_error
              END,
              updated_at = now()
          FROM budget b
          WHERE extraction_jobs.id = b.id
          RETURNING extraction_jobs.*, b.frees_at IS NOT NULL AS deferred`.pipe(Effect.orDie)

      const claimOnce = Effect.fnUntraced(function* (
        workerId: string,
        leaseMs: number,
        kinds: ReadonlyArray<JobKind>,
        perHour: number
      ) {
        const [row] = yield* leaseNext(workerId, leaseMs, kinds, headOfProfileLine, perHour)
        if (row === undefined) return Option.none<ClaimAttempt>()
        const outcome = yield* Schema.decodeUnknownEffect(ClaimOutcome)(row).pipe(Effect.orDie)
        if (outcome.deferred)
          return Option.some<ClaimAttempt>({
            _tag: "Deferred",
            jobId: outcome.id,
            profileId: outcome.profileId,
            runAfter: outcome.runAfter
          })
        const [job] = yield* decodeClaimed([row]).pipe(Effect.orDie)
        return Option.some<ClaimAttempt>({ _tag: "Claimed", job: job! })
      })

      const decodeDelivery = Schema.decodeUnknownEffect(ClaimedDelivery)
      // By run_after alone: the events of one transaction share it and created_at, and ordering by both
      // made the planner sort every due delivery, each probed for its line's head (23 ms a claim with
      // 2,000 queued); this way the index's order is read until the first delivery that may go.
      const claimDelivery = (workerId: string, leaseMs: number, below: number) =>
        leaseNext(
          workerId,
          leaseMs,
          ["webhook"],
          headOfDeliveryLine,
          0,
          sql`j.webhook_id NOT IN ${webhooksWithInFlight(below)}`,
          sql`j.run_after`
        ).pipe(
          Effect.flatMap(([row]) =>
            row === undefined ? Effect.succeedNone : Effect.asSome(Effect.orDie(decodeDelivery(row)))
          )
        )

      const deliveriesInFlight = (webhookId: string, besides: string) =>
        sql`
          SELECT count(*)::int AS count FROM extraction_jobs
          WHERE status = 'running' AND kind = 'webhook' AND locked_until >= now()
            AND webhook_id = ${webhookId} AND id <> ${besides}`.pipe(
          Effect.flatMap(Schema.decodeUnknownEffect(InFlight)),
          Effect.orDie,
          Effect.map(([row]) => row?.count ?? 0)
        )

      const extendLease = (jobId: string, workerId: string, leaseMs: number) =>
        sql`
          UPDATE extraction_jobs SET locked_until = now() + ${leaseMs} * interval '1 millisecond'
          WHERE id = ${jobId} AND locked_by = ${workerId} AND status = 'running'
          RETURNING 1`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.length > 0)
        )

      /**
       * Ends the worker's hold on a job it still holds (a job whose lease was taken over is left
       * alone); true when it held it.
       */
      const finish = (jobId: string, workerId: string, changes: Statement.Fragment) =>
        sql`
          UPDATE extraction_jobs SET ${changes}, locked_by = NULL, locked_until = NULL, updated_at = now()
          WHERE id = ${jobId} AND locked_by = ${workerId} AND status = 'running'
          RETURNING 1`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.length > 0)
        )

      const dueInMs = (kinds: ReadonlyArray<JobKind>, headOfLine: Statement.Fragment, among: Statement.Fragment) =>
        sql`
          -- No waiting job: NULL (greatest() would turn it into 0 and the workers would poll without pause).
          SELECT (CASE WHEN count(*) = 0 THEN NULL
                       ELSE greatest(0, extract(epoch FROM min(CASE WHEN j.status = 'pending' THEN j.run_after ELSE j.locked_until END) - now()) * 1000)
                  END)::float8 AS ms
          FROM extraction_jobs j
          WHERE j.status IN ('pending', 'running') AND ${ofKinds(kinds)} AND ${headOfLine} AND ${among}`.pipe(
          Effect.flatMap(Schema.decodeUnknownEffect(NextDue)),
          Effect.orDie,
          Effect.map((rows) => Option.fromNullishOr(rows[0]?.ms))
        )
      const nextDueInMs = (kinds: ReadonlyArray<JobKind>) => dueInMs(kinds, headOfProfileLine, sql`true`)
      // A delivery held back by its webhook's deliveries in flight is not due: a loop waits for one of
      // those (its own loop takes the next when it ends; a lease that runs out is counted here).
      const nextDeliveryDueInMs = (maxInFlight: number) =>
        dueInMs(
          ["webhook"],
          headOfDeliveryLine,
          sql`(j.status = 'running' OR j.webhook_id NOT IN ${webhooksWithInFlight(maxInFlight)})`
        )

      /**
       * The jobs the current request may see (the management API's reads): those of its namespace's
       * profiles and webhooks.
       */
      const inScope = Effect.map(currentNamespace, (scope) =>
        scope._tag === "One"
          ? sql`(profile_id IN (SELECT id FROM profiles WHERE namespace = ${scope.name})
                 OR webhook_id IN (SELECT id FROM webhooks WHERE namespace = ${scope.name}))`
          : sql`true`
      )

      const findById = (jobId: string) =>
        Effect.flatMap(inScope, (visible) =>
          jobsAsSeen(sql`extraction_jobs`, sql`j.id = ${jobId}::uuid AND ${visible}`).pipe(
            Effect.flatMap(decodeJobs),
            Effect.orDie,
            Effect.map((jobs) => Option.fromUndefinedOr(jobs[0]))
          )
        )

      const counts = Effect.flatMap(inScope, (visible) =>
        Effect.all(
          [
            sql`SELECT status, count(*)::int AS count FROM extraction_jobs WHERE ${visible} GROUP BY status`.pipe(
              Effect.flatMap(Schema.decodeUnknownEffect(Counts))
            ),
            sql`SELECT extract(epoch FROM now() - min(created_at))::float8 AS seconds FROM extraction_jobs
                WHERE status = 'pending' AND ${visible}`.pipe(Effect.flatMap(Schema.decodeUnknownEffect(OldestPending)))
          ],
          { concurrency: 2 }
        ).pipe(
          Effect.orDie,
          Effect.map(([counts, oldest]) => ({ counts, oldestPendingSeconds: oldest[0]?.seconds ?? null }))
        )
      )

      const latest = (status: JobStatus, limit: number) =>
        Effect.flatMap(inScope, (visible) =>
          sql`${jobsAsSeen(sql`extraction_jobs`, sql`j.status = ${status} AND ${visible}`)}
              ORDER BY j.updated_at DESC, j.id LIMIT ${limit}`.pipe(Effect.flatMap(decodeJobs), Effect.orDie)
        )

      // Reads only unfinished jobs (a partial index), however many finished ones the table keeps.
      // Deliveries are left out: one waiting to retry a receiver that is down is no sign of a slow worker.
      const backlog = sql`
        SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
               count(*) FILTER (WHERE status = 'running')::int AS running,
               extract(epoch FROM now() - min(created_at) FILTER (WHERE status = 'pending'))::float8 AS seconds
        FROM extraction_jobs WHERE status IN ('pending', 'running') AND kind <> 'webhook'`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Backlog)),
        Effect.orDie,
        Effect.map(([row]) => ({
          pending: row?.pending ?? 0,
          running: row?.running ?? 0,
          oldestPendingSeconds: Math.max(0, row?.seconds ?? 0)
        }))
      )

      return JobsRepo.of({
        insertIngest,
        claimOnce,
        claimDelivery,
        deliveriesInFlight,
        extendLease,
        markSucceeded: (jobId, workerId, result) =>
          finish(
            jobId,
            workerId,
            sql`status = 'succeeded', result = ${sql.json(result)}, last_error = NULL, finished_at = now()`
          ),
        markPending: (jobId, workerId, error, delayMs) =>
          Effect.asVoid(
            finish(
              jobId,
              workerId,
              sql`status = 'pending', last_error = ${error}, run_after = now() + ${delayMs} * interval '1 millisecond'`
            )
          ),
        markFailed: (jobId, workerId, error) =>
          Effect.asVoid(finish(jobId, workerId, sql`status = 'failed', last_error = ${error}, finished_at = now()`)),
        putBack: (jobId, workerId) =>
          Effect.asVoid(finish(jobId, workerId, sql`status = 'pending', attempts = greatest(attempts - 1, 0)`)),
        nextDueInMs,
        nextDeliveryDueInMs,
        findById,
        requeueFailed: (jobId) =>
          // The insert trigger wakes the workers for new jobs; a requeued one notifies by itself, on commit.
          Effect.flatMap(inScope, (visible) =>
            sql`
            WITH requeued AS (
              UPDATE extraction_jobs
              SET status = 'pending', attempts = 0, run_after = now(), finished_at = NULL, updated_at = now()
              WHERE id = ${jobId}::uuid AND status = 'failed' AND ${visible}
              RETURNING *
            )
            ${jobsAsSeen(
              sql`(SELECT requeued.* FROM requeued, LATERAL (SELECT pg_notify('extraction_jobs', requeued.kind)) AS notified)`,
              sql`true`
            )}`.pipe(
              Effect.flatMap(decodeJobs),
              Effect.orDie,
              Effect.map((jobs) => Option.fromUndefinedOr(jobs[0]))
            )
          ),
        counts,
        latest,
        backlog
      })
    })
  )
}
