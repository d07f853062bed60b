import { useState } from "preact/hooks"
import { type Job, request } from "../../api.ts"
import { ErrorNote } from "../../components/Status.tsx"
import { Time } from "../../components/Time.tsx"
import { shortWhen, until } from "../../format.ts"
import { href } from "../../router.ts"
import { WaitReason } from "./WaitReason.tsx"

/** Whose job it is: the user id, linked to the profile; a webhook delivery leads to the webhooks. */
const JobUser = ({ job }: { readonly job: Job }) =>
  job.profileId !== null ? (
    <a href={href({ page: "profile", id: job.profileId })}>{job.externalId ?? job.profileId.slice(0, 8)}</a>
  ) : job.kind === "webhook" ? (
    <a href={href({ page: "webhooks" })}>webhook delivery</a>
  ) : (
    <>—</>
  )

/**
 * One job, one line. A pending one says when it may run and why it waits; a finished or running one
 * its last error and when it changed; a failed one can be retried.
 */
export const JobRow = ({ job, onRetried }: { readonly job: Job; readonly onRetried: () => void }) => {
  const [error, setError] = useState<Error | null>(null)
  const short = job.id.slice(0, 8)
  const retry = async () => {
    try {
      await request("POST", `/api/jobs/${encodeURIComponent(job.id)}/retry`)
      onRetried()
    } catch (failure) {
      setError(failure as Error)
    }
  }
  return (
    <tr data-job={job.id} data-wait-reason={job.waitReason ?? undefined}>
      <th scope="row">
        <code>{short}</code>
      </th>
      <td>{job.kind}</td>
      <td class="wrap">
        <JobUser job={job} />
      </td>
      {job.status === "pending" ? (
        <>
          <td>
            <Time iso={job.runAfter} text={until} /> <span class="muted">({shortWhen(job.runAfter)})</span>
          </td>
          <td class="wrap explain">
            <WaitReason job={job} />
          </td>
          <td class="number">{job.attempts}</td>
        </>
      ) : (
        <>
          <td class="number">{job.attempts}</td>
          <td class="wrap explain">
            {job.lastError ?? "—"}
            <ErrorNote error={error} />
          </td>
          <td>
            <Time iso={job.updatedAt} />
          </td>
          <td>
            {job.status === "failed" && (
              <button type="button" onClick={retry} aria-label={`Retry job ${short}`}>
                Retry
              </button>
            )}
          </td>
        </>
      )}
    </tr>
  )
}
