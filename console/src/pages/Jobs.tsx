import { useEffect, useState } from "preact/hooks"
import { type JobStatus, type JobsOverview, request } from "../api.ts"
import { ErrorNote } from "../components/Status.tsx"
import { panelId, Tabs, tabId } from "../components/Tabs.tsx"
import { useLoad } from "../components/useLoad.ts"
import { JobTable } from "./jobs/JobTable.tsx"

const STATUSES: ReadonlyArray<JobStatus> = ["pending", "running", "failed", "succeeded"]
const LABELS: Readonly<Record<JobStatus, string>> = {
  pending: "Pending",
  running: "Running",
  failed: "Failed",
  succeeded: "Succeeded"
}

const Loading = () => (
  <p class="muted" aria-live="polite">
    Loading…
  </p>
)

/**
 * The job queue: a tab per status with its count, the jobs of one (failed ones can be retried), and
 * how old the oldest pending job is. It opens on the pending jobs, or on the first status that has any,
 * never on an empty list while jobs wait under another tab.
 */
export const Jobs = () => {
  // `null` until the operator picks a tab: the page then chooses one that has jobs.
  const [chosen, setChosen] = useState<JobStatus | null>(null)
  const status = chosen ?? "pending"
  const [overview, reload] = useLoad(
    () =>
      request<JobsOverview>("GET", `/api/jobs?status=${status}&limit=50`).then((overview) => ({ ...overview, status })),
    [status]
  )
  const ready = overview.state === "ready" ? overview.value : null
  const firstWithJobs = ready === null ? undefined : STATUSES.find((name) => ready.counts[name] > 0)
  const choosing = chosen === null && firstWithJobs !== undefined && firstWithJobs !== "pending"
  useEffect(() => {
    if (choosing) setChosen(firstWithJobs)
  }, [choosing, firstWithJobs])
  const refresh = () => void reload()
  return (
    <main>
      <div class="row spread">
        <h1>Jobs</h1>
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </div>
      {overview.state === "failed" ? (
        <ErrorNote error={overview.error} />
      ) : ready === null || choosing ? (
        <Loading />
      ) : (
        // Kept while another tab's jobs load, so the tab that has focus stays where it is.
        <>
          <p class="muted">
            Oldest pending job:{" "}
            {ready.oldestPendingSeconds === null ? "none waiting" : `${Math.round(ready.oldestPendingSeconds)} s old`}
          </p>
          <Tabs
            label="Jobs by status"
            prefix="jobs-"
            tabs={STATUSES.map((name) => [
              name,
              <>
                {LABELS[name]} <span class="count">{ready.counts[name]}</span>
              </>
            ])}
            selected={status}
            onSelect={setChosen}
          />
          <section role="tabpanel" id={panelId("jobs-", status)} aria-labelledby={tabId("jobs-", status)}>
            {ready.status !== status ? (
              <Loading />
            ) : (
              <JobTable status={status} label={LABELS[status]} jobs={ready.jobs} onRetried={refresh} />
            )}
          </section>
        </>
      )}
    </main>
  )
}
