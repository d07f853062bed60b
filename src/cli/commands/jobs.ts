import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { type Job, JobStatus } from "../../domain/Job.ts"
import { gatewayApi, print } from "../root.ts"
import { renderTable, renderTime } from "../table.ts"

/** Why a job is where it is, in a few words: its wait reason when pending, its error when failed. */
const note = (job: Job) =>
  job.status === "pending"
    ? `${job.waitReason ?? "queued"}${job.waitReason === "queued" ? "" : ` until ${renderTime(job.runAfter)}`}`
    : (job.lastError ?? "")

const list = Command.make(
  "list",
  {
    status: Flag.Literals("status", JobStatus.literals).pipe(
      Flag.withDescription("Which jobs (default: pending, where a stall shows)"),
      Flag.withDefault("pending")
    ),
    limit: Flag.Int("limit").pipe(Flag.withDefault(50))
  },
  Effect.fn("cli.jobs.list")(function* ({ limit, status }) {
    const api = yield* gatewayApi
    const overview = yield* api.jobs.overview({ query: { status, limit } })
    yield* print(overview, ({ counts, jobs, oldestPendingSeconds }) =>
      [
        `pending ${counts.pending} · running ${counts.running} · succeeded ${counts.succeeded} · failed ${counts.failed}` +
          (oldestPendingSeconds === null ? "" : ` · oldest pending ${Math.round(oldestPendingSeconds)} s`),
        renderTable<Job>(
          [
            { header: "ID", cell: (j) => j.id },
            { header: "KIND", cell: (j) => j.kind },
            { header: "USER", cell: (j) => j.externalId ?? (j.webhookId === null ? "—" : `webhook ${j.webhookId}`) },
            { header: "ATTEMPTS", cell: (j) => String(j.attempts), align: "right" },
            { header: "UPDATED", cell: (j) => renderTime(j.updatedAt) },
            { header: "WHY", cell: note, maxWidth: 70 }
          ],
          jobs,
          `No ${status} jobs.`
        )
      ].join("\n")
    )
  })
).pipe(Command.withDescription("The extraction queue's counts and its jobs of one status"))

const retry = Command.make(
  "retry",
  { id: Argument.String("id").pipe(Argument.withDescription("A failed job's id")) },
  Effect.fn("cli.jobs.retry")(function* ({ id }) {
    const api = yield* gatewayApi
    const retried = yield* api.jobs.retry({ params: { jobId: id } })
    yield* print(
      retried,
      ({ job }) =>
        `job ${job.id} is queued again (${job.kind}${job.externalId === null ? "" : ` of ${job.externalId}`})`
    )
  })
).pipe(Command.withDescription("Put a failed job back in the queue"))

export const jobs = Command.make("jobs").pipe(
  Command.withDescription("The background jobs: what waits, what failed"),
  Command.withSubcommands([list, retry])
)
