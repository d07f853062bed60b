import { Context, Effect } from "effect"
import type { ProfileId } from "../domain/Profile.ts"
import type { JobLine } from "./JobHandler.ts"
import { type ClaimedJob, JobQueue } from "./JobQueue.ts"
import { JobSettings } from "./JobSettings.ts"

/**
 * Told when a job's work on a profile has committed: this process's cached snapshot of the
 * profile goes at once (other replicas hear the database's notification). The composition root
 * provides it from `SnapshotCache`.
 */
export class ProfileChanged extends Context.Service<
  ProfileChanged,
  {
    readonly changed: (profileId: ProfileId) => Effect.Effect<void>
  }
>()("gateway/jobs/ProfileChanged") {}

export interface ProfileLineOptions {
  readonly name: string
  readonly loops: number
  /** Jobs of the line one profile may start per hour (0: no limit): over it, the next one waits. */
  readonly profileJobsPerHour: number
  readonly runsOn?: string
}

/**
 * A line of a profile's work: one profile's jobs of the line run one at a time, oldest first,
 * leased and retried as `JobSettings` says; a committed job drops the profile's cached snapshot.
 */
export const profileLine = Effect.fnUntraced(function* (options: ProfileLineOptions) {
  const queue = yield* JobQueue
  const settings = yield* JobSettings
  const profiles = yield* ProfileChanged
  // Counted in the queue table, so the budget holds however many replicas run workers.
  const budget = { profileJobsPerHour: options.profileJobsPerHour }
  const line: JobLine<ClaimedJob> = {
    ...options,
    leaseMs: settings.leaseMs,
    retry: settings.retry,
    claim: (workerId, kinds) => queue.claim(workerId, settings.leaseMs, kinds, budget),
    nextDueInMs: queue.nextDueInMs,
    committed: (job) => profiles.changed(job.profileId),
    workFor: (job) => ({ profileId: job.profileId, keyId: job.keyId ?? undefined })
  }
  return line
})
