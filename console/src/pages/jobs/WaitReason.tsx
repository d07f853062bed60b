import type { Job } from "../../api.ts"

const REASONS = {
  queued: "Queued: waits for a worker",
  deferred: "Deferred: the profile's hourly job budget is spent",
  retrying: "Retrying: an attempt failed"
} as const

/**
 * Why a pending job has not run: said in words, with the gateway's note (for a deferral, which
 * budget and until when; for a retry, the error of the attempt that failed).
 */
export const WaitReason = ({ job }: { readonly job: Job }) =>
  job.waitReason === null ? (
    <>—</>
  ) : (
    <>
      <span class={`badge ${job.waitReason}`}>{REASONS[job.waitReason]}</span>
      {job.waitReason !== "queued" && job.lastError !== null && <span class="note">{job.lastError}</span>}
    </>
  )
