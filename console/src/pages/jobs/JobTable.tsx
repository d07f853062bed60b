import type { Job, JobStatus } from "../../api.ts"
import { ScrollTable, TableHead } from "../../components/Table.tsx"
import { JobRow } from "./JobRow.tsx"

/** A pending job's columns: when it runs and why it waits. */
const PENDING = ["Job", "Kind", "User", "Runs", "Why it waits", "Attempts"]
/** The others': what went wrong and when, and Retry for a failed one. */
const SETTLED = ["Job", "Kind", "User", "Attempts", "Error", "Updated"]

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
    <ScrollTable dense class="jobs" caption={`${label} jobs, the latest ${jobs.length}`}>
      <TableHead columns={status === "pending" ? PENDING : SETTLED} actions={status !== "pending"} />
      <tbody>
        {jobs.map((job) => (
          <JobRow key={job.id} job={job} onRetried={onRetried} />
        ))}
      </tbody>
    </ScrollTable>
  )
}
