import { Predicate, Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { SummaryVersion, TraitChange } from "../domain/History.ts"
import { Job, JobStatus } from "../domain/Job.ts"
import { Cues, Importance, IsoInstant, Memory, MemoryContent, MemoryType, RecentMemory } from "../domain/Memory.ts"
import { Message } from "../domain/Message.ts"
import { ExternalId, ListedProfile, MAX_SUMMARY_LENGTH, Profile } from "../domain/Profile.ts"
import { ProfileRefParam } from "../domain/ProfileRef.ts"
import { isStorable, isStorableJsonValue, StorableString } from "../domain/storableText.ts"
import { Confidence, Trait, TraitKey } from "../domain/Trait.ts"
import { UuidText } from "../domain/Uuid.ts"
import { DEFAULT_SEARCH_RESULTS, SearchLimit, SearchQuery } from "../memories/searchRequest.ts"
import { RenderedReceipt } from "../pipeline/receipt.ts"
import { ApiValidation } from "./ApiValidation.ts"
import { BadRequest, Conflict, NotFound, PayloadTooLarge, ServiceUnavailable } from "./OpenAiError.ts"

/** The most records one list call returns; larger `limit`s are capped to it. */
export const MAX_PAGE_SIZE = 100
export const DEFAULT_PAGE_SIZE = 20

const Limit = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
const Offset = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
/** `{id}`: the profile's internal UUID (a UUID always means that), or the caller's external id. */
const ProfileRef = { id: ProfileRefParam }

// ---- payloads and responses ---------------------------------------------------------------

export const ProfileWithTraits = Schema.Struct({ ...Profile.fields, traits: Schema.Array(Trait) })

export class ProfileCreated extends Schema.Class<ProfileCreated>("ProfileCreated")(
  { profile: Profile },
  { httpApiStatus: 201, description: "The profile was created" }
) {}

export class ProfileFound extends Schema.Class<ProfileFound>("ProfileFound")(
  { profile: Profile },
  { description: "The profile already existed" }
) {}

const Success = Schema.Struct({ success: Schema.Literal(true) })

export class JobAccepted extends Schema.Class<JobAccepted>("JobAccepted")(
  { job: Job },
  { httpApiStatus: 202, description: "Queued (or still running when `wait` ran out)" }
) {}

export class JobFinished extends Schema.Class<JobFinished>("JobFinished")(
  { job: Job },
  { description: "With `wait=true`: the job has finished" }
) {}

export const WorkerStats = Schema.Struct({
  running: Schema.Boolean,
  loops: Schema.Int,
  claimed: Schema.Int,
  succeeded: Schema.Int,
  retried: Schema.Int,
  failed: Schema.Int,
  released: Schema.Int,
  leaseLost: Schema.Int,
  inFlight: Schema.Int
})

export class MemoryCreated extends Schema.Class<MemoryCreated>("MemoryCreated")(
  { memory: Memory },
  { httpApiStatus: 201 }
) {}

/**
 * What a message would get injected: the block (null: nothing) and its receipt, as the header has it;
 * or, when a plugin's `inject` hook would refuse the request (or a required one fail), that refusal.
 */
export const InjectionPreview = Schema.Struct({
  context: Schema.NullOr(Schema.String),
  receipt: Schema.NullOr(RenderedReceipt),
  refusal: Schema.NullOr(Schema.Struct({ status: Schema.Int, code: Schema.String, message: Schema.String }))
})

// ---- groups -------------------------------------------------------------------------------

export class SystemGroup extends HttpApiGroup.make("system", { topLevel: true })
  .add(
    HttpApiEndpoint.get("health", "/health", {
      success: Schema.Struct({ status: Schema.Literal("ok") })
    }).annotateMerge(
      OpenApi.annotations({ summary: "Liveness", description: "Liveness: answers as soon as the port is open" })
    ),
    HttpApiEndpoint.get("ready", "/ready", {
      success: Schema.Struct({ status: Schema.Literal("ready") }),
      error: ServiceUnavailable
    }).annotateMerge(OpenApi.annotations({ summary: "Readiness", description: "Readiness: the database answers" }))
  )
  .annotateMerge(OpenApi.annotations({ description: "Liveness and readiness, for probes" })) {}

export class ProfilesGroup extends HttpApiGroup.make("profiles")
  .add(
    HttpApiEndpoint.get("list", "/", {
      query: {
        limit: Schema.optionalKey(Limit),
        offset: Schema.optionalKey(Offset),
        search: Schema.optionalKey(StorableString.check(Schema.isMaxLength(256)))
      },
      success: Schema.Struct({ profiles: Schema.Array(ListedProfile), total: Schema.Int })
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List profiles",
        description:
          `Newest first, each with its counts of traits, memories and messages and its last activity. ` +
          `\`search\` matches external ids by case-insensitive substring (\`%\` and \`_\` are literal); \`limit\` is capped at ${MAX_PAGE_SIZE}.`
      })
    ),
    HttpApiEndpoint.post("create", "/", {
      payload: Schema.Struct({ externalId: ExternalId }),
      success: [ProfileCreated, ProfileFound]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Get or create a profile",
        description: "Get or create the profile of an external id"
      })
    ),
    HttpApiEndpoint.get("get", "/:id", {
      params: ProfileRef,
      success: Schema.Struct({ profile: ProfileWithTraits, recentMemories: Schema.Array(RecentMemory) }),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Read a profile" })),
    HttpApiEndpoint.patch("update", "/:id", {
      params: ProfileRef,
      payload: Schema.Struct({ summary: StorableString.check(Schema.isMaxLength(MAX_SUMMARY_LENGTH)) }),
      success: Schema.Struct({ profile: Profile }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Set a profile's summary",
        description: "Set the summary; bumps summaryVersion atomically"
      })
    ),
    HttpApiEndpoint.delete("remove", "/:id", {
      params: ProfileRef,
      success: Schema.Struct({
        success: Schema.Literal(true),
        /** The profile that was removed: a caller can see it removed the one it meant. */
        profile: Schema.Struct({ id: Schema.String, externalId: Schema.String }),
        deleted: Schema.Struct({ traits: Schema.Int, memories: Schema.Int, messages: Schema.Int })
      }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Delete a profile",
        description: "Delete the profile and everything attached to it; names the profile removed"
      })
    ),
    HttpApiEndpoint.get("export", "/:id/export", {
      params: ProfileRef,
      success: Schema.Struct({
        profile: Profile,
        traits: Schema.Array(Trait),
        memories: Schema.Array(Memory),
        messages: Schema.Array(Message),
        exportedAt: Schema.DateTimeUtc
      }),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Export a profile" })),
    HttpApiEndpoint.get("summaryHistory", "/:id/summary/history", {
      params: ProfileRef,
      success: Schema.Struct({ history: Schema.Array(SummaryVersion) }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({ summary: "List summary versions", description: "Every summary version, newest first" })
    ),
    HttpApiEndpoint.get("messages", "/:id/messages", {
      params: ProfileRef,
      query: {
        limit: Schema.optionalKey(Limit),
        before: Schema.optionalKey(UuidText.annotate({ description: "The id of the oldest message already seen" }))
      },
      success: Schema.Struct({ messages: Schema.Array(Message) }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List recorded messages",
        description:
          `The profile's recorded turns, newest first, \`limit\` at a time (at most ${MAX_PAGE_SIZE}); ` +
          "`before` pages back from the oldest message already seen."
      })
    ),
    HttpApiEndpoint.post("preview", "/:id/preview", {
      params: ProfileRef,
      payload: Schema.Struct({ message: Schema.String.check(Schema.isBetweenLength(1, 10_000), isStorable) }),
      success: InjectionPreview,
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Preview what would be injected",
        description:
          "The context block and the `X-Service-Context` receipt a chat completion with this message as " +
          "the user's latest would get, from the same profile cache and ranking; no provider is called, nothing is " +
          "recorded, and no memory is marked as used."
      })
    ),
    HttpApiEndpoint.post("ingest", "/:id/ingest", {
      params: ProfileRef,
      query: { wait: Schema.optionalKey(Schema.Boolean) },
      payload: Schema.Struct({
        data: StorableString.check(Schema.isMinLength(1)),
        source: Schema.optionalKey(StorableString.check(Schema.isMaxLength(200)))
      }),
      success: [JobAccepted, JobFinished],
      error: [NotFound, PayloadTooLarge]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Learn from text about the user",
        description:
          "Queue extraction of traits and memories from arbitrary text about the user. " +
          "202 with the job; `?wait=true` waits (up to the extraction timeout) and answers 200 once the job has finished."
      })
    )
  )
  .prefix("/api/profiles")
  .middleware(ApiValidation)
  .annotateMerge(
    OpenApi.annotations({
      description:
        "`{id}` is the profile's internal UUID or the caller's external id. A UUID always means the internal id: " +
        "a profile whose external id is UUID-shaped is reached by its internal id (find it with `?search=`)."
    })
  ) {}

export class TraitsGroup extends HttpApiGroup.make("traits")
  .add(
    HttpApiEndpoint.get("list", "/:id/traits", {
      params: ProfileRef,
      success: Schema.Struct({ traits: Schema.Array(Trait) }),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "List traits" })),
    HttpApiEndpoint.put("put", "/:id/traits/:key", {
      params: { ...ProfileRef, key: TraitKey },
      payload: Schema.Struct({
        value: Schema.Json.check(isStorableJsonValue),
        confidence: Schema.optionalKey(Confidence)
      }),
      success: Schema.Struct({ trait: Trait }),
      error: [NotFound, BadRequest]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Set a trait",
        description:
          "Create or replace a trait by hand (source `manual`, confidence 1.0 unless given). " +
          "The value must match the trait's declared type; an undeclared key keeps the type of its first value."
      })
    ),
    HttpApiEndpoint.delete("remove", "/:id/traits/:key", {
      params: { ...ProfileRef, key: StorableString },
      success: Success,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Delete a trait" })),
    HttpApiEndpoint.get("history", "/:id/traits/:key/history", {
      params: { ...ProfileRef, key: StorableString },
      success: Schema.Struct({ history: Schema.Array(TraitChange) }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List a trait's changes",
        description: "Every change of the trait's value, newest first"
      })
    )
  )
  .prefix("/api/profiles")
  .middleware(ApiValidation)
  .annotateMerge(
    OpenApi.annotations({ description: "Typed facts about a user, set by hand or learned, with their history" })
  ) {}

const Supersedes = Schema.Array(Schema.String)
  .check(Schema.isMaxLength(100))
  .annotate({
    description:
      "Ids of this profile's memories that the new one replaces (a fact that changed): they stay " +
      "in listings and exports, marked `supersededBy`, but are never injected again"
  })

const MemoryCues = Cues.annotate({
  description:
    'Situations and topics in which the memory matters, e.g. ["dinner ideas", "restaurants"] for ' +
    '"is vegetarian": the memory is found by them too (they are never injected). Left out, the extraction model ' +
    "writes them in the background (EXTRACTION_WRITE_CUES); an empty list means none"
})

const NewMemoryFields = {
  content: MemoryContent,
  cues: Schema.optionalKey(MemoryCues),
  type: MemoryType,
  importance: Schema.optionalKey(Importance),
  occurredAt: Schema.optionalKey(IsoInstant.annotate({ description: "When the remembered thing happened (events)" })),
  supersedes: Schema.optionalKey(Supersedes)
}

/** The most memories one import call takes. */
export const MAX_IMPORT = 1000

export class MemoriesImported extends Schema.Class<MemoriesImported>("MemoriesImported")(
  { memories: Schema.Array(Memory) },
  { httpApiStatus: 201 }
) {}

export const ScoreParts = Schema.Struct({
  semantic: Schema.NullOr(Schema.Number).annotate({
    description: "Cosine similarity of message and memory; null without vectors"
  }),
  keyword: Schema.Number.annotate({ description: "Normalised BM25, in [0, 1]" }),
  relevance: Schema.Number.annotate({
    description:
      "The probability compared with the floor: the score, or with a vector the larger of it and the keyword-only probability"
  }),
  time: Schema.Number.annotate({
    description: "1 when the memory happened in the period the message names (less for long periods), else 0"
  }),
  importance: Schema.Number.annotate({ description: "importance × decay factor" }),
  recency: Schema.Number.annotate({ description: "0.5^(age / MEMORY_RECENCY_HALF_LIFE_DAYS)" })
}).annotate({ description: "What the ranking model read of the memory" })

export const SearchResult = Schema.Struct({
  ...Memory.fields,
  score: Schema.Number,
  /** Above the relevance floor: injection would consider it. */
  relevant: Schema.Boolean,
  scoreParts: ScoreParts
})

export const RetrievalInfo = Schema.Struct({
  mode: Schema.Literals(["fused", "keyword"]),
  semantic: Schema.Literals(["used", "off", "no_vectors", "not_needed", "timeout", "failed"]),
  period: Schema.NullOr(Schema.Struct({ from: Schema.DateTimeUtc, to: Schema.DateTimeUtc, phrase: Schema.String }))
})

export class MemoriesGroup extends HttpApiGroup.make("memories")
  .add(
    HttpApiEndpoint.get("list", "/:id/memories", {
      params: ProfileRef,
      query: {
        type: Schema.optionalKey(MemoryType),
        limit: Schema.optionalKey(Limit),
        offset: Schema.optionalKey(Offset)
      },
      success: Schema.Struct({ memories: Schema.Array(Memory), total: Schema.Int }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List memories",
        description:
          "Sorted by importance × decayFactor, then newest first, a page at a time; `total` counts them all (of " +
          "`type`, when given). Superseded memories are listed too (`supersededBy` set)."
      })
    ),
    HttpApiEndpoint.post("create", "/:id/memories", {
      params: ProfileRef,
      payload: Schema.Struct(NewMemoryFields),
      success: MemoryCreated,
      error: [NotFound, BadRequest]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Add a memory",
        description:
          "Create a memory by hand; it is embedded (and, without `cues`, given cues) in the background. " +
          "`supersedes` names the memories it replaces."
      })
    ),
    HttpApiEndpoint.patch("update", "/:id/memories/:memoryId", {
      params: { ...ProfileRef, memoryId: Schema.String },
      payload: Schema.Struct({
        content: Schema.optionalKey(MemoryContent),
        cues: Schema.optionalKey(MemoryCues),
        type: Schema.optionalKey(MemoryType),
        importance: Schema.optionalKey(Importance),
        occurredAt: Schema.optionalKey(Schema.NullOr(IsoInstant))
      }),
      success: Schema.Struct({ memory: Memory }),
      error: [NotFound, BadRequest]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Edit a memory",
        description:
          "Change a memory's content, cues, type, importance or time (`occurredAt: null` clears it). " +
          "A new text or new cues are embedded again; a new text on a memory without cues gets cues written in the background."
      })
    ),
    HttpApiEndpoint.post("import", "/:id/memories/import", {
      params: ProfileRef,
      payload: Schema.Struct({
        memories: Schema.Array(
          Schema.Struct({
            ...NewMemoryFields,
            createdAt: Schema.optionalKey(
              IsoInstant.annotate({ description: "The original creation time (not in the future)" })
            )
          })
        ).check(Schema.isBetweenLength(1, MAX_IMPORT))
      }),
      success: MemoriesImported,
      error: [NotFound, BadRequest]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Import memories",
        description:
          `Add up to ${MAX_IMPORT} memories in one transaction (all or none), e.g. from another memory store; ` +
          "they are embedded in the background."
      })
    ),
    HttpApiEndpoint.post("search", "/:id/memories/search", {
      params: ProfileRef,
      payload: Schema.Struct({
        query: SearchQuery,
        limit: Schema.optionalKey(SearchLimit),
        type: Schema.optionalKey(MemoryType),
        at: Schema.optionalKey(
          IsoInstant.annotate({
            description: "Rank as of this moment (time phrases, recency and decay are read against it); default now"
          })
        )
      }),
      success: Schema.Struct({ memories: Schema.Array(SearchResult), retrieval: RetrievalInfo }),
      error: NotFound
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Rank memories as injection does",
        description:
          "Rank the profile's current memories for a message exactly as injection does, with each score's parts. " +
          "`score` is the probability that the memory answers the message; " +
          `\`relevant\` marks those at or above the relevance floor; \`limit\` defaults to ${DEFAULT_SEARCH_RESULTS}.`
      })
    ),
    HttpApiEndpoint.delete("remove", "/:id/memories/:memoryId", {
      params: { ...ProfileRef, memoryId: Schema.String },
      success: Success,
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Delete a memory" }))
  )
  .prefix("/api/profiles")
  .middleware(ApiValidation)
  .annotateMerge(
    OpenApi.annotations({ description: "What the gateway remembers about a user, ranked as injection ranks it" })
  ) {}

export class JobsGroup extends HttpApiGroup.make("jobs")
  .add(
    HttpApiEndpoint.get("overview", "/", {
      query: { status: Schema.optionalKey(JobStatus), limit: Schema.optionalKey(Limit) },
      success: Schema.Struct({
        counts: Schema.Struct({ pending: Schema.Int, running: Schema.Int, succeeded: Schema.Int, failed: Schema.Int }),
        oldestPendingSeconds: Schema.NullOr(Schema.Number),
        jobs: Schema.Array(Job),
        worker: WorkerStats
      })
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Extraction queue overview",
        description:
          "Queue counts, the age of the oldest pending job, this process's worker counters, and the " +
          "latest jobs of `status` (default: the latest failures)."
      })
    ),
    HttpApiEndpoint.get("get", "/:jobId", {
      params: { jobId: Schema.String },
      success: Schema.Struct({ job: Job }),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Read an extraction job" })),
    HttpApiEndpoint.post("retry", "/:jobId/retry", {
      params: { jobId: Schema.String },
      success: Schema.Struct({ job: Job }),
      error: [NotFound, Conflict]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Retry a failed job",
        description:
          "Put a failed job back in the queue, with its attempts anew; the workers take it at once. 409 unless it had failed."
      })
    )
  )
  .prefix("/api/jobs")
  .middleware(ApiValidation)
  .annotateMerge(
    OpenApi.annotations({ description: "The extraction queue: what is learned from recorded turns, in the background" })
  ) {}

export class PluginsGroup extends HttpApiGroup.make("plugins")
  .add(
    HttpApiEndpoint.get("list", "/", {
      success: Schema.Struct({
        plugins: Schema.Array(
          Schema.Struct({
            name: Schema.String,
            required: Schema.Boolean,
            hooks: Schema.Array(Schema.String),
            valueTypes: Schema.Array(Schema.String),
            calls: Schema.Int,
            failures: Schema.Int,
            timeouts: Schema.Int
          })
        )
      })
    }).annotateMerge(
      OpenApi.annotations({
        summary: "List plugins",
        description: "The loaded plugins in the order their hooks run, with their hook calls, failures and timeouts"
      })
    )
  )
  .prefix("/api/plugins")
  .middleware(ApiValidation)
  .annotateMerge(OpenApi.annotations({ description: "The loaded plugins and their hook statistics" })) {}

const objectOr = (value: unknown): Record<string, unknown> => (Predicate.isObject(value) ? { ...value } : {})

const bearerSecurity = (spec: Record<string, unknown>): Record<string, unknown> => {
  const components = objectOr(spec["components"])
  return {
    ...spec,
    components: {
      ...components,
      securitySchemes: {
        ...objectOr(components["securitySchemes"]),
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "Required on /api and /v1 when the service runs with SERVICE_API_KEY"
        }
      }
    },
    security: [{ bearer: [] }]
  }
}

export class GatewayApi extends HttpApi.make("gateway")
  .add(SystemGroup, ProfilesGroup, TraitsGroup, MemoriesGroup, JobsGroup, PluginsGroup)
  .annotateMerge(
    OpenApi.annotations({
      title: "Profile-memory gateway",
      version: "0.1.0",
      description:
        "The proxy's memory routes (OpenAI Chat Completions and Responses, Anthropic Messages) and the " +
        "management API for the profiles, traits and memories the gateway keeps per user. Every other /v1 call is " +
        'passed through to the provider. Errors have the OpenAI shape {"error": {"message", "type", "code", "param"}}.',
      license: { name: "MIT", url: "https://opensource.org/licenses/MIT" },
      // Relative: the gateway that serves this document, wherever it runs.
      servers: [{ url: "/", description: "This gateway" }],
      transform: bearerSecurity
    })
  ) {}
