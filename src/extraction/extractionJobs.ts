import { Effect } from "effect"
import type { JobKind } from "../domain/Job.ts"
import type { JobHandler, JobWork } from "../jobs/JobHandler.ts"
import type { ClaimedJob } from "../jobs/JobQueue.ts"
import { CueWriter } from "./CueWriter.ts"
import type { ExtractionKeyRevoked } from "./ExtractionCredentials.ts"
import { ExtractionLine, modelJobError } from "./ExtractionLine.ts"
import type { ExtractionCallFailed } from "./ExtractionModel.ts"
import { Extractor } from "./Extractor.ts"

type Plan = (job: ClaimedJob) => Effect.Effect<JobWork, ExtractionCallFailed | ExtractionKeyRevoked>

/**
 * The extraction model's jobs, on the extraction line: `turn` and `ingest` (memories and traits
 * from a turn or a text), `summary` (the profile's summary rewritten), `cues` (cues for memories
 * written without them). The model call runs first; its writes commit with the job.
 */
export const extractionJobs = Effect.gen(function* () {
  const extractor = yield* Extractor
  const cueWriter = yield* CueWriter
  const line = yield* ExtractionLine
  const handler = (kind: JobKind, plan: Plan): JobHandler<ClaimedJob> => ({
    kind,
    line,
    run: (job) => plan(job).pipe(Effect.mapError(modelJobError))
  })
  return [
    { ...handler("turn", extractor.extract), failed: extractor.release },
    handler("ingest", extractor.extract),
    handler("summary", extractor.summarize),
    handler("cues", cueWriter.plan)
  ]
})
