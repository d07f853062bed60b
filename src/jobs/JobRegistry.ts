import { Context, Effect, Layer, Option } from "effect"
import { JobKind } from "../domain/Job.ts"
import { UsageAttribution } from "../domain/Usage.ts"
import type { AnyJobHandler, HeldJob, JobError, JobLine, JobWork, RetryPolicy } from "./JobHandler.ts"

/** A claimed job with its handler's work, and what follows its commit. */
export interface ClaimedWork extends HeldJob {
  readonly run: Effect.Effect<JobWork, JobError>
  readonly committed: Effect.Effect<void>
  /** Once the job failed for good (the handler's `failed`, if it has one). */
  readonly failed: Effect.Effect<void>
}

/** A line as the worker runs it: the kinds of its handlers, and a claim that hands over the work. */
export interface RunnableLine {
  readonly name: string
  readonly kinds: ReadonlyArray<JobKind>
  readonly loops: number
  readonly leaseMs: number
  readonly retry: RetryPolicy
  readonly runsOn: string | undefined
  readonly claim: (workerId: string) => Effect.Effect<Option.Option<ClaimedWork>>
  readonly nextDueInMs: Effect.Effect<Option.Option<number>>
}

const runnable = (line: JobLine<HeldJob>, handlers: ReadonlyMap<JobKind, AnyJobHandler>): RunnableLine => {
  const kinds = Array.from(handlers.keys())
  return {
    name: line.name,
    kinds,
    loops: line.loops,
    leaseMs: line.leaseMs,
    retry: line.retry,
    runsOn: line.runsOn,
    nextDueInMs: line.nextDueInMs(kinds),
    claim: (workerId) =>
      line.claim(workerId, kinds).pipe(
        Effect.map(
          Option.map((job) => {
            const handler = handlers.get(job.kind)
            return {
              id: job.id,
              kind: job.kind,
              attempts: job.attempts,
              // The line claims only its handlers' kinds: a miss is a line that ignored `kinds`.
              run:
                handler === undefined
                  ? Effect.die(`line ${line.name} claimed a ${job.kind} job`)
                  : line.workFor === undefined
                    ? handler.run(job)
                    : Effect.provideService(handler.run(job), UsageAttribution, line.workFor(job)),
              committed: line.committed(job),
              failed: handler?.failed?.(job) ?? Effect.void
            }
          })
        )
      )
  }
}

/**
 * The handlers of every job kind, by line. Each feature builds its kinds' handlers (beside the
 * feature: `extraction/extractionJobs.ts`, `webhooks/deliveryJobs.ts`, …) and the composition root
 * lists them here; the worker runs the lines and knows no kind.
 */
export class JobRegistry extends Context.Service<
  JobRegistry,
  {
    readonly lines: ReadonlyArray<RunnableLine>
  }
>()("gateway/jobs/JobRegistry") {
  /** From each feature's handlers (`Effect.all` of them): a kind handled twice is a defect. */
  static readonly layer = <R>(features: Effect.Effect<ReadonlyArray<ReadonlyArray<AnyJobHandler>>, never, R>) =>
    Layer.effect(
      JobRegistry,
      Effect.gen(function* () {
        const handlers = (yield* features).flat()
        // Lines in the order their first handler came, each with its handlers by kind.
        const lines = new Map<JobLine<HeldJob>, Map<JobKind, AnyJobHandler>>()
        const registered = new Set<JobKind>()
        for (const handler of handlers) {
          if (registered.has(handler.kind)) return yield* Effect.die(`two handlers for ${handler.kind} jobs`)
          registered.add(handler.kind)
          const ofLine = lines.get(handler.line) ?? new Map<JobKind, AnyJobHandler>()
          lines.set(handler.line, ofLine.set(handler.kind, handler))
        }
        const unhandled = JobKind.literals.filter((kind) => !registered.has(kind))
        if (unhandled.length > 0)
          yield* Effect.logWarning(`no handler for ${unhandled.join(", ")} jobs: this process leaves them queued`)
        return JobRegistry.of({ lines: Array.from(lines, ([line, byKind]) => runnable(line, byKind)) })
      })
    )
}
