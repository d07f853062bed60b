import { Config, Context, Option, Schema } from "effect"
import { layerDefaults } from "../config/defaults.ts"
import {
  commaList,
  flag,
  nonNegativeInt,
  nonNegativeNumber,
  numberBetween,
  optionalSecret,
  positiveInt,
  section,
  url
} from "../config/values.ts"
import { Modality } from "../domain/Attachment.ts"
import { type UpstreamEndpoint, upstreamFromEnv } from "../upstream/UpstreamConfig.ts"

const isModality = Schema.is(Modality)

/**
 * The extraction model, its worker loops and the rules for merging what it extracts (`EXTRACTION_*`,
 * `SUMMARY_*`, `INGEST_MAX_CHARACTERS`). `fallback`: where the model is and its key when
 * `EXTRACTION_BASE_URL` / `EXTRACTION_API_KEY` are unset.
 */
export const extractionFromEnv = (fallback: UpstreamEndpoint) =>
  section({
    model: Config.String("EXTRACTION_MODEL").pipe(Config.withDefault("gpt-4o-mini")),
    baseUrl: Config.option(url("EXTRACTION_BASE_URL")).pipe(Config.map(Option.getOrElse(() => fallback.baseUrl))),
    apiKey: optionalSecret("EXTRACTION_API_KEY").pipe(Config.map(Option.orElse(() => fallback.apiKey))),
    /** Worker loops per process; 0 leaves jobs queued for other replicas. */
    concurrency: nonNegativeInt("EXTRACTION_CONCURRENCY", 2),
    maxAttempts: positiveInt("EXTRACTION_MAX_ATTEMPTS", 5),
    retryBaseMs: positiveInt("EXTRACTION_RETRY_BASE_MS", 1000),
    retryMaxMs: positiveInt("EXTRACTION_RETRY_MAX_MS", 60_000),
    /** How long a claimed job stays claimed without a heartbeat before another worker may take it. */
    leaseMs: positiveInt("EXTRACTION_LEASE_MS", 60_000),
    /** The safety-net poll; notifications wake the workers at once. */
    pollMs: positiveInt("EXTRACTION_POLL_MS", 10_000),
    timeoutMs: positiveInt("EXTRACTION_TIMEOUT_MS", 60_000),
    shutdownGraceMs: positiveInt("EXTRACTION_SHUTDOWN_GRACE_MS", 10_000),
    /** An extracted value replaces an extracted one if its confidence is at least the stored one minus this. */
    confidenceMargin: nonNegativeNumber("EXTRACTION_CONFIDENCE_MARGIN", 0.1),
    /** ...or if the stored extracted value is older than this. */
    traitMaxAgeDays: positiveInt("EXTRACTION_TRAIT_MAX_AGE_DAYS", 90),
    /** Trigram similarity from which a new memory counts as a repeat of an existing one. */
    dedupeSimilarity: numberBetween("EXTRACTION_DEDUPE_SIMILARITY", { minimum: 0.1, maximum: 1 }).pipe(
      Config.withDefault(0.6)
    ),
    summaryEveryChanges: positiveInt("SUMMARY_EVERY_CHANGES", 5),
    summaryMaxAgeHours: positiveInt("SUMMARY_MAX_AGE_HOURS", 24),
    maxIngestCharacters: positiveInt("INGEST_MAX_CHARACTERS", 100_000),
    /** Characters of turn text one extraction call may send to the model (the newest are kept). */
    maxInputCharacters: positiveInt("EXTRACTION_MAX_INPUT_CHARACTERS", 20_000),
    /** Extraction jobs (turn, ingest, summary, cues) one profile may start per hour; more wait in the queue (0: no limit). */
    profileJobsPerHour: nonNegativeInt("EXTRACTION_JOBS_PER_PROFILE_PER_HOUR", 120),
    /** Memories written through the API or MCP without cues get them from the extraction model. */
    writeCues: flag("EXTRACTION_WRITE_CUES", true),
    /**
     * What the extraction model reads besides text (`EXTRACTION_MODALITIES=text,image,file`): a user's
     * images and files are held for it only when it takes them. Text is always read.
     */
    modalities: commaList("EXTRACTION_MODALITIES", {
      valid: (entry) => isModality(entry),
      expected: "a comma-separated list of text, image and file (e.g. text,image,file)"
    }).pipe(
      Config.map((entries): ReadonlyArray<Modality> => [...new Set<Modality>(["text", ...entries.filter(isModality)])])
    ),
    /** Largest image or file (decoded bytes) held for the extraction model; a larger one is only noted. */
    attachmentMaxBytes: positiveInt("EXTRACTION_ATTACHMENT_MAX_BYTES", 5 * 1024 * 1024),
    /** Images and files held from one turn (the first ones); the rest are only noted. */
    attachmentsPerTurn: positiveInt("EXTRACTION_ATTACHMENTS_PER_TURN", 4),
    /** Images and files one extraction call sends (a job may cover several messages); the rest are only noted. */
    attachmentsPerJob: positiveInt("EXTRACTION_ATTACHMENTS_PER_JOB", 8)
  })

export type ExtractionSettings = Config.Success<ReturnType<typeof extractionFromEnv>>

export class ExtractionConfig extends Context.Service<ExtractionConfig, ExtractionSettings>()(
  "gateway/extraction/ExtractionConfig"
) {}

/** The section at its defaults (the OpenAI endpoint's as the fallback), for a slice's test layer. */
export const extractionAtDefaults = layerDefaults(
  ExtractionConfig,
  Config.flatMap(upstreamFromEnv, (upstream) => extractionFromEnv(upstream.openai))
)
