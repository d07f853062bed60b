import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Metric, Option, Schema } from "effect"
import type { Statement } from "effect/sql"
import { Job, type JobKind, type JobStatus } from "../domain/Job.ts"
import type { ProfileId } from "../domain/Profile.ts"
import { extractionJobsDeferred } from "../observability/metrics.ts"
import { PerRequestTrait } from "../traits/PerRequestTrait.ts"

/** A job a worker holds, with what it needs to run. */
export class ClaimedJob extends Schema.Class<ClaimedJob>("ClaimedJob")({
  ...Job.fields,
  profileId: Schema.String,
  messageIds: Schema.Array(Schema.String),
  traitDefinitions: Schema.Array(PerRequestTrait),
  input: Schema.NullOr(Schema.Struct({ data: Schema.String, source: Schema.NullOr(Schema.String) }))
}) {}

export interface QueueOverview {
  readonly counts: Readonly<Record<JobStatus, number>>
  /** Age of the oldest pending job in seconds: how far behind the workers are. */
  readonly oldestPendingSeconds: number | null
  readonly jobs: ReadonlyArray<Job>
}

/** The unfinished work: what metrics report, cheap enough to read on every scrape. */
export interface QueueBacklog {
  readonly pending: number
  readonly running: number
  /** Age of the oldest pending job in seconds (0 when none is pending). */
  readonly oldestPendingSeconds: number
}

const Counts = Schema.Array(Schema.Struct({ status: Schema.String, count: Schema.Int }))
const OldestPending = Schema.Array(Schema.Struct({ seconds: Schema.NullOr(Schema.Number) }))
const Backlog = Schema.Array(Schema.Struct({ pending: Schema.Int, running: Schema.Int, seconds: Schema.NullOr(Schema.Number) }))
const NextDue = Schema.Array(Schema.Struct({ ms: Schema.NullOr(Schema.Number) }))
const ClaimOutcome = Schema.Struct({ deferred: Schema.Boolean })

export interface ClaimOptions {
  /**
   * Extraction jobs (turn, ingest, summary: the ones that call the extraction model) one profile
   * may start per hour, counted over the jobs workers took in the last hour (0: no limit).
   */
  readonly profileJobsPerHour?: number
}

/** Marks the note a deferral leaves in `last_error`, so a later deferral replaces it but not a real error. */
const DEFERRED = "deferred:"

const deferralNote = (perHour: number) =>
  `${DEFERRED} this profile started ${perHour} extraction jobs in the last hour ` +
  "(EXTRACTION_JOBS_PER_PROFILE_PER_HOUR); it runs at run_after"

/**
 * The durable extraction queue in PostgreSQL. Any number of workers (in any number of processes)
 * share it: a claim takes a due job with `FOR UPDATE SKIP LOCKED`, only ever the oldest unfinished
 * job of its profile, so one profile's jobs run one at a time and in order. A claim is a lease: a
 * worker that dies loses it after `leaseMs` and the job is claimed again. A profile past its hourly
 * extraction budget has its next job put back with `run_after` at the moment the budget frees up:
 * it stays queued (visible in `/api/jobs`), never dropped, and no worker polls for it meanwhile.
 */
export class JobQueue extends Context.Service<JobQueue, {
  readonly enqueueIngest: (profileId: ProfileId, data: string, source: string | null) => Effect.Effect<Job>
  /** Takes the next due job of one of these kinds, if any (deferring those over their profile's budget). */
  readonly claim: (
    workerId: string,
    leaseMs: number,
    kinds: ReadonlyArray<JobKind>,
    options?: ClaimOptions
  ) => Effect.Effect<Option.Option<ClaimedJob>>
  readonly heartbeat: (jobId: string, workerId: string, leaseMs: number) => Effect.Effect<void>
  /** Marks the job done (call inside the transaction that applied its results). */
  readonly complete: (jobId: string, workerId: string, result: unknown) => Effect.Effect<void>
  readonly retry: (jobId: string, workerId: string, error: string, delayMs: number) => Effect.Effect<void>
  readonly fail: (jobId: string, workerId: string, error: string) => Effect.Effect<void>
  /** Gives a job back untouched (shutdown): it is pending again and the attempt does not count. */
  readonly release: (jobId: string, workerId: string) => Effect.Effect<void>
  /** Milliseconds until some job of these kinds may become claimable, if any is waiting. */
  readonly nextDueInMs: (kinds: ReadonlyArray<JobKind>) => Effect.Effect<Option.Option<number>>
  readonly get: (jobId: string) => Effect.Effect<Option.Option<Job>>
  readonly backlog: Effect.Effect<QueueBacklog>
  readonly overview: (options: { readonly status: JobStatus | undefined; readonly limit: number }) => Effect.Effect<QueueOverview>
}>()("gateway/store/JobQueue") {
  static readonly layer = Layer.effect(
    JobQueue,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const decodeJobs = Schema.decodeUnknownEffect(Schema.Array(Job))
      const decodeClaimed = Schema.decodeUnknownEffect(Schema.Array(ClaimedJob))

      /**
       * Jobs that head their profile's line: the oldest unfinished job of the same profile in the same
       * line. Embedding has a line of its own: it only writes vectors, so it never waits behind (or
       * holds up) a profile's extraction jobs. Written as one index probe per job (not `NOT EXISTS`
       * over older ones, which the planner ran as a join quadratic in a profile's backlog: 7.8 s for
       * `nextDueInMs` with 10,000 queued jobs of one profile, 70 ms this way).
       */
      const headOfLine = sql`j.id = (
        SELECT e.id FROM extraction_jobs e
        WHERE e.profile_id = j.profile_id AND e.status IN ('pending', 'running')
          AND (e.kind = 'embed') = (j.kind = 'embed')
        ORDER BY e.created_at, e.id
        LIMIT 1)`

      const enqueueIngest = Effect.fn("JobQueue.enqueueIngest")(function*(profileId: ProfileId, data: string, source: string | null) {
        const rows = yield* sql`
          INSERT INTO extraction_jobs (profile_id, kind, message_ids, input)
          VALUES (${profileId}, 'ingest', '{}', ${sql.json({ data, source })})
          RETURNING *`.pipe(Effect.orDie)
        return (yield* decodeJobs(rows).pipe(Effect.orDie))[0]!
      })

      const ofKinds = (kinds: ReadonlyArray<JobKind>) => sql`j.kind IN (SELECT jsonb_array_elements_text(${sql.json(kinds)}))`

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

      const claimOnce = (workerId: string, leaseMs: number, kinds: ReadonlyArray<JobKind>, perHour: number) =>
        sql`
          WITH candidate AS (
            SELECT j.id, j.profile_id, j.kind FROM extraction_jobs j
            WHERE ((j.status = 'pending' AND j.run_after <= now()) OR (j.status = 'running' AND j.locked_until < now()))
              AND ${ofKinds(kinds)} AND ${headOfLine}
            ORDER BY j.run_after, j.created_at
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
              -- A deferral says why in last_error, unless that holds a real error of an earlier attempt.
              last_error = CASE
                WHEN b.frees_at IS NULL OR starts_with(coalesce(extraction_jobs.last_error, ${DEFERRED}), ${DEFERRED}) IS NOT TRUE
                  THEN extraction_jobs.last_error
                ELSE ${deferralNote(perHour)}
              END,
              updated_at = now()
          FROM budget b
          WHERE extraction_jobs.id = b.id
          RETURNING extraction_jobs.*, b.frees_at IS NOT NULL AS deferred`.pipe(Effect.orDie)

      const claim = Effect.fn("JobQueue.claim")(function*(
        workerId: string,
        leaseMs: number,
        kinds: ReadonlyArray<JobKind>,
        options?: ClaimOptions
      ) {
        const perHour = options?.profileJobsPerHour ?? 0
        // Each deferral moves a job's run_after past now, so this ends once a job is claimed or none is due.
        while (true) {
          const [row] = yield* claimOnce(workerId, leaseMs, kinds, perHour)
          if (row === undefined) return Option.none<ClaimedJob>()
          const { deferred } = yield* Schema.decodeUnknownEffect(ClaimOutcome)(row).pipe(Effect.orDie)
          if (!deferred) return Option.fromUndefinedOr((yield* decodeClaimed([row]).pipe(Effect.orDie))[0])
          yield* Metric.update(extractionJobsDeferred, 1)
          yield* Effect.logDebug("extraction job deferred: its profile's hourly budget is spent", { jobId: row["id"] })
        }
      })

      const heartbeat = Effect.fn("JobQueue.heartbeat")(function*(jobId: string, workerId: string, leaseMs: number) {
        yield* sql`
          UPDATE extraction_jobs SET locked_until = now() + ${leaseMs} * interval '1 millisecond'
          WHERE id = ${jobId} AND locked_by = ${workerId} AND status = 'running'`.pipe(Effect.orDie)
      })

      const finish = (jobId: string, workerId: string, changes: Statement.Fragment) =>
        sql`
          UPDATE extraction_jobs SET ${changes}, locked_by = NULL, locked_until = NULL, updated_at = now()
          WHERE id = ${jobId} AND locked_by = ${workerId} AND status = 'running'`.pipe(Effect.orDie, Effect.asVoid)

      const complete = (jobId: string, workerId: string, result: unknown) =>
        finish(jobId, workerId, sql`status = 'succeeded', result = ${sql.json(result)}, last_error = NULL, finished_at = now()`)

      const retry = (jobId: string, workerId: string, error: string, delayMs: number) =>
        finish(jobId, workerId, sql`status = 'pending', last_error = ${error}, run_after = now() + ${delayMs} * interval '1 millisecond'`)

      const fail = (jobId: string, workerId: string, error: string) =>
        finish(jobId, workerId, sql`status = 'failed', last_error = ${error}, finished_at = now()`)

      const release = (jobId: string, workerId: string) =>
        finish(jobId, workerId, sql`status = 'pending', attempts = greatest(attempts - 1, 0)`)

      const nextDueInMs = (kinds: ReadonlyArray<JobKind>) =>
        sql`
          -- No waiting job: NULL (greatest() would turn it into 0 and the workers would poll without pause).
          SELECT (CASE WHEN count(*) = 0 THEN NULL
                       ELSE greatest(0, extract(epoch FROM min(CASE WHEN j.status = 'pending' THEN j.run_after ELSE j.locked_until END) - now()) * 1000)
                  END)::float8 AS ms
          FROM extraction_jobs j
          WHERE j.status IN ('pending', 'running') AND ${ofKinds(kinds)} AND ${headOfLine}`.pipe(
          Effect.flatMap(Schema.decodeUnknownEffect(NextDue)),
          Effect.orDie,
          Effect.map((rows) => Option.fromNullishOr(rows[0]?.ms))
        )

      const get = Effect.fn("JobQueue.get")(function*(jobId: string) {
        if (!/^[0-9a-f-]{36}$/i.test(jobId)) return Option.none()
        const rows = yield* sql`SELECT * FROM extraction_jobs WHERE id = ${jobId}::uuid`.pipe(Effect.orDie)
        return Option.fromUndefinedOr((yield* decodeJobs(rows).pipe(Effect.orDie))[0])
      })

      const overview = Effect.fn("JobQueue.overview")(function*(options: {
        readonly status: JobStatus | undefined
        readonly limit: number
      }) {
        const [countRows, oldestRows, jobRows] = yield* Effect.all([
          sql`SELECT status, count(*)::int AS count FROM extraction_jobs GROUP BY status`,
          sql`SELECT extract(epoch FROM now() - min(created_at))::float8 AS seconds FROM extraction_jobs WHERE status = 'pending'`,
          // Without a filter: the latest failures, the jobs an operator needs to look at.
          sql`SELECT * FROM extraction_jobs WHERE status = ${options.status ?? "failed"}
              ORDER BY updated_at DESC, id LIMIT ${options.limit}`
        ], { concurrency: 3 }).pipe(Effect.orDie)
        const counts: Record<JobStatus, number> = { pending: 0, running: 0, succeeded: 0, failed: 0 }
        for (const row of yield* Schema.decodeUnknownEffect(Counts)(countRows).pipe(Effect.orDie)) {
          if (row.status in counts) counts[row.status as JobStatus] = row.count
        }
        const [oldest] = yield* Schema.decodeUnknownEffect(OldestPending)(oldestRows).pipe(Effect.orDie)
        return { counts, oldestPendingSeconds: oldest?.seconds ?? null, jobs: yield* decodeJobs(jobRows).pipe(Effect.orDie) }
      })

      // Reads only unfinished jobs (a partial index), however many finished ones the table keeps.
      const backlog = Effect.gen(function*() {
        const rows = yield* sql`
          SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
                 count(*) FILTER (WHERE status = 'running')::int AS running,
                 extract(epoch FROM now() - min(created_at) FILTER (WHERE status = 'pending'))::float8 AS seconds
          FROM extraction_jobs WHERE status IN ('pending', 'running')`.pipe(Effect.orDie)
        const [row] = yield* Schema.decodeUnknownEffect(Backlog)(rows).pipe(Effect.orDie)
        return { pending: row?.pending ?? 0, running: row?.running ?? 0, oldestPendingSeconds: Math.max(0, row?.seconds ?? 0) }
      }).pipe(Effect.withSpan("JobQueue.backlog"))

      return JobQueue.of({ enqueueIngest, claim, heartbeat, complete, retry, fail, release, nextDueInMs, get, backlog, overview })
    })
  )
}
