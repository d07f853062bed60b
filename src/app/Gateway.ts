import { Effect, Layer, Metric } from "effect"
import type { HttpServer } from "effect/http"
import { ServiceAuth } from "../auth/ServiceAuth.ts"
import { Background } from "../background/Background.ts"
import { Draining } from "../background/Draining.ts"
import { Budgets } from "../budgets/Budgets.ts"
import { DatabaseClientLive, MigrationsLive } from "../db/Database.ts"
import { DatabaseHealth } from "../db/DatabaseHealth.ts"
import { Embedder } from "../embedding/Embedder.ts"
import { embedJobs } from "../embedding/embedJobs.ts"
import { MemoryEmbedding } from "../embedding/MemoryEmbedding.ts"
import { CueWriter } from "../extraction/CueWriter.ts"
import { ExtractionLine } from "../extraction/ExtractionLine.ts"
import { Extractor } from "../extraction/Extractor.ts"
import { extractionJobs } from "../extraction/extractionJobs.ts"
import { RequestIdentity } from "../identity/RequestIdentity.ts"
import { JobQueue } from "../jobs/JobQueue.ts"
import { JobRegistry } from "../jobs/JobRegistry.ts"
import { JobWorker } from "../jobs/JobWorker.ts"
import { ProfileChanged } from "../jobs/profileLine.ts"
import { VirtualKeys } from "../keys/VirtualKeys.ts"
import { Memories } from "../memories/Memories.ts"
import { MemorySearch } from "../memories/MemorySearch.ts"
import { SharedMemories } from "../memories/SharedMemories.ts"
import { LoggingLive } from "../observability/Logging.ts"
import { TracingLive } from "../observability/Tracing.ts"
import { Completion } from "../pipeline/Completion.ts"
import type { AnyPlugin } from "../plugins/Plugin.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { Ingestion } from "../profileApi/Ingestion.ts"
import { InjectionPreview } from "../profileApi/InjectionPreview.ts"
import { ProfileRecord } from "../profileApi/ProfileRecord.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { ConversationsRepo } from "../responses/ConversationsRepo.ts"
import { StoredResponsesRepo } from "../responses/StoredResponsesRepo.ts"
import { RetentionSweep } from "../retention/RetentionSweep.ts"
import { ThreadRetention } from "../retention/ThreadRetention.ts"
import { Routes } from "../routing/Routes.ts"
import { NamespaceSettingsStore } from "../settings/NamespaceSettingsStore.ts"
import { SnapshotCache } from "../snapshots/SnapshotCache.ts"
import { ThreadSummarizer } from "../threads/ThreadSummarizer.ts"
import { ThreadsRepo } from "../threads/ThreadsRepo.ts"
import { threadJobs } from "../threads/threadJobs.ts"
import { NamespaceTraitSchemas } from "../traits/NamespaceTraitSchemas.ts"
import { TraitSchema } from "../traits/TraitSchema.ts"
import { Traits } from "../traits/Traits.ts"
import { Upstream } from "../upstream/Upstream.ts"
import { Usage } from "../usage/Usage.ts"
import { UsageRecorder } from "../usage/UsageRecorder.ts"
import { UsageRetention } from "../usage/UsageRetention.ts"
import { deliveryJobs } from "../webhooks/deliveryJobs.ts"
import { WebhookSender } from "../webhooks/WebhookSender.ts"
import { Webhooks } from "../webhooks/Webhooks.ts"
import { AppConfig, type ConfigSection } from "./AppConfig.ts"
import { GatewayMetrics } from "./GatewayMetrics.ts"
import { HttpAppRoutes } from "./HttpApp.ts"
import { serveRoutes } from "./HttpServerLive.ts"

/** A profile's committed job drops this process's cached snapshot of it. */
const ProfileChangedLive = Layer.effect(
  ProfileChanged,
  Effect.map(SnapshotCache, (cache) => ProfileChanged.of({ changed: cache.invalidate }))
).pipe(Layer.provide(SnapshotCache.layer))

/** The background jobs: each kind's handler, built beside its feature, in the registry the worker runs by line. */
const JobsLive = JobWorker.layer.pipe(
  Layer.provide(JobRegistry.layer(Effect.all([extractionJobs, threadJobs, embedJobs, deliveryJobs]))),
  Layer.provide([Extractor.layer, CueWriter.layer, ThreadSummarizer.layer, MemoryEmbedding.layer, WebhookSender.layer]),
  Layer.provide([ExtractionLine.layer, JobQueue.layer, Embedder.layer]),
  Layer.provide([ExtractionLine.jobSettings, ProfileChangedLive])
)

/**
 * The services behind the routes, each layer bringing its own dependencies (a layer used by several is built
 * once): the completion pipeline, the management slices, the job worker and the sweeps. Beneath them, one of
 * each per gateway: the work detached from requests and the shutdown drain. Needs a `PgClient` (migrated),
 * the configuration's sections (`AppConfig.layer` provides them) and the `PluginHost`.
 */
export const ServicesLive = Layer.mergeAll(
  Completion.layer,
  JobsLive,
  ThreadRetention,
  RetentionSweep,
  GatewayMetrics.layer,
  ServiceAuth.layer,
  RequestIdentity.layer,
  RateLimiter.layer,
  Profiles.layer,
  TraitSchema.layer,
  Traits.layer,
  Memories.layer,
  MemorySearch.layer,
  SharedMemories.layer,
  ProfileRecord.layer,
  InjectionPreview.layer,
  Ingestion.layer,
  VirtualKeys.layer,
  Webhooks.layer,
  JobQueue.layer,
  ThreadsRepo.layer,
  StoredResponsesRepo.layer,
  ConversationsRepo.layer,
  Upstream.layer,
  DatabaseHealth.layer,
  Usage.layer,
  UsageRetention,
  Budgets.layer,
  Routes.layer,
  NamespaceSettingsStore.layer,
  NamespaceTraitSchemas.layer
).pipe(Layer.provideMerge(Layer.mergeAll(Background.layer(), Draining.layer, UsageRecorder.layer)))

export interface GatewayOptions {
  /** Configuration (default: the environment; `AppConfig.layerFrom` overrides parts of it). */
  readonly config?: Layer.Layer<AppConfig, unknown>
  /** Plugins registered in code, after those named in `PLUGINS`. */
  readonly plugins?: ReadonlyArray<AnyPlugin>
}

/**
 * Everything but the HTTP server, on the `PgClient` you provide (for embedding): the database is
 * migrated at start, plugins are loaded, the worker runs. Needs `PgClient`/`SqlClient` and the
 * configuration's sections (`AppConfig.layer` or `AppConfig.layerFrom` provides them).
 */
export const GatewayServices = (options: Pick<GatewayOptions, "plugins"> = {}) =>
  ServicesLive.pipe(Layer.provideMerge(PluginHost.layer(options.plugins)), Layer.provideMerge(MigrationsLive))

/**
 * The whole gateway on the given HTTP server, configured by `config` (the environment by default),
 * on `DATABASE_URL` or the embedded PostgreSQL. Shutdown runs in reverse: the server stops
 * accepting and drains, the worker drains, then the database closes.
 */
export const GatewayLive = (
  server: Layer.Layer<HttpServer.HttpServer, unknown, AppConfig | ConfigSection>,
  options: GatewayOptions = {}
) =>
  Draining.onShutdown.pipe(
    Layer.provideMerge(serveRoutes(HttpAppRoutes, server)),
    Layer.provide(GatewayServices(options)),
    Layer.provide(DatabaseClientLive),
    Layer.provide(TracingLive),
    Layer.provide(LoggingLive),
    // Its own metrics, apart from anything else in the process (another gateway, a test).
    Layer.provide(Layer.sync(Metric.MetricRegistry, () => new Map())),
    // Each module reads its own section, taken from whichever `AppConfig` is given.
    Layer.provideMerge(AppConfig.sections),
    Layer.provideMerge(options.config ?? AppConfig.layer)
  )
