import { useState } from "preact/hooks"
import { type Job, type JobStatus, type JobsOverview, request } from "../api.ts"
import { ErrorNote, Show } from "../components/Status.tsx"
import { useLoad } from "../components/useLoad.ts"
import { when } from "../format.ts"
import { href } from "../router.ts"

const STATUSES: ReadonlyArray<JobStatus> = ["pending", "running", "failed", "succeeded"]

/** The extraction queue: how much waits, how old the oldest is, and the jobs of one status (failed ones can be retried). */
export const Jobs = () => {
  const [status, setStatus] = useState<JobStatus>("failed")
  const [overview, reload] = useLoad(
    () => request<JobsOverview>("GET", `/api/jobs?status=${status}&limit=50`),
    [status]
  )
  return (
    <main>
      <h1>Jobs</h1>
      <Show loaded={overview}>
        {(overview) => (
          <>
            <dl class="counts">
              {STATUSES.map((name) => (
                <div>
                  <dt>{name}</dt>
                  <dd>{overview.counts[name]}</dd>
                </div>
              ))}
              <div>
                <dt>oldest pending</dt>
                <dd>
                  {overview.oldestPendingSeconds === null ? "—" : `${Math.round(overview.oldestPendingSeconds)} s`}
                </dd>
              </div>
            </dl>
            <label>
              Show{" "}
              <select value={status} onChange={(e) => setStatus(e.currentTarget.value as JobStatus)}>
                {STATUSES.map((name) => (
                  <option value={name}>{name}</option>
                ))}
              </select>
            </label>
            {overview.jobs.length === 0 ? (
              <p class="muted">No {status} jobs.</p>
            ) : (
              <div class="scroll">
                <table>
                  <caption class="visually-hidden">{status} jobs</caption>
                  <thead>
                    <tr>
                      <th scope="col">Job</th>
                      <th scope="col">Kind</th>
                      <th scope="col">Profile</th>
                      <th scope="col">Attempts</th>
                      <th scope="col">Error</th>
                      <th scope="col">Updated</th>
                      <th scope="col">
                        <span class="visually-hidden">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {overview.jobs.map((job) => (
                      <JobRow key={job.id} job={job} onRetried={reload} />
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </>
        )}
      </Show>
    </main>
  )
}

const JobRow = ({ job, onRetried }: { readonly job: Job; readonly onRetried: () => void }) => {
  const [error, setError] = useState<Error | null>(null)
  const retry = async () => {
    try {
      await request("POST", `/api/jobs/${encodeURIComponent(job.id)}/retry`)
      onRetried()
    } catch (failure) {
      setError(failure as Error)
    }
  }
  return (
    <tr data-job={job.id}>
      <th scope="row">
        <code>{job.id.slice(0, 8)}</code>
      </th>
      <td>{job.kind}</td>
      <td>
        {job.profileId !== null ? (
          <a href={href({ page: "profile", id: job.profileId })}>{job.profileId.slice(0, 8)}</a>
        ) : job.kind === "webhook" ? (
          <a href={href({ page: "webhooks" })}>webhook delivery</a>
        ) : (
          "—"
        )}
      </td>
      <td>{job.attempts}</td>
      <td class="wrap">
        {job.lastError ?? "—"}
        <ErrorNote error={error} />
      </td>
      <td>{when(job.updatedAt)}</td>
      <td>
        {job.status === "failed" && (
          <button type="button" onClick={retry} aria-label={`Retry job ${job.id.slice(0, 8)}`}>
            Retry
          </button>
        )}
      </td>
    </tr>
  )
}
