import type { Job, JobStatus } from "../../api.ts"
import { JobRow } from "./JobRow.tsx"

/** The jobs of one status: a pending job's columns say when it runs and why it waits; the others', what went wrong. */
export const JobTable = (props: {
  readonly status: JobStatus
  readonly label: string
  readonly jobs: ReadonlyArray<Job>
  readonly onRetried: () => void
}) => {
  const { status, label, jobs, onRetried } = props
  if (jobs.length === 0) return <p class="muted">No {status} jobs.</p>
  return (
    <div class="scroll table-box">
      <table class="dense jobs">
        <caption class="visually-hidden">
          {label} jobs, the latest {jobs.length}
        </caption>
        <thead>
          {status === "pending" ? (
            <tr>
              <th scope="col">Job</th>
              <th scope="col">Kind</th>
              <th scope="col">User</th>
              <th scope="col">Runs</th>
              <th scope="col">Why it waits</th>
              <th scope="col">Attempts</th>
            </tr>
          ) : (
            <tr>
              <th scope="col">Job</th>
              <th scope="col">Kind</th>
              <th scope="col">User</th>
              <th scope="col">Attempts</th>
              <th scope="col">Error</th>
              <th scope="col">Updated</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          )}
        </thead>
        <tbody>
          {jobs.map((job) => (
            <JobRow key={job.id} job={job} onRetried={onRetried} />
          ))}
        </tbody>
      </table>
    </div>
  )
}
