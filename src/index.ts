/**
 * The gateway as a library: its layers, services, schemas and the plugin API, to embed the whole
 * service, the management API and proxy routes, or just the profile, trait and memory services in an
 * Effect application.
 */

export { GatewayApi } from "./app/Api.ts"
// Configuration: `AppConfig` is the whole, each `…Config` the section one module reads
export { AppConfig, type AppConfigShape, appConfigFromEnv, type ConfigSection } from "./app/AppConfig.ts"
// The whole service and its parts
export { GatewayLive, type GatewayOptions, GatewayServices, ServicesLive } from "./app/Gateway.ts"
export { ApiRoutes, EmbeddableRoutes, HttpAppRoutes } from "./app/HttpApp.ts"
export { GatewayRouteMiddleware, NodeServerLive, serveRoutes } from "./app/HttpServerLive.ts"
export { ProxyRoutes } from "./app/ProxyRoutes.ts"
export { rateLimitHeaders, rateLimitResponse } from "./app/RateLimitResponse.ts"
// Services
export { AuthFailure, type KeyScope, ServiceAuth } from "./auth/ServiceAuth.ts"
export { Background } from "./background/Background.ts"
export type { DeepPartial } from "./config/deepMerge.ts"
// Database
export { DatabaseClientLive, MigrationsLive, pgClientOptions } from "./db/Database.ts"
export { DatabaseConfig } from "./db/DatabaseConfig.ts"
export { EmbeddedPostgres, EmbeddedPostgresError } from "./db/EmbeddedPostgres.ts"
export { migrations } from "./db/migrations.ts"
export {
  CreatedInFuture,
  ExternalIdConflict,
  InvalidTraitValue,
  MemoryNotFound,
  ProfileNotFound,
  TraitNotFound,
  UnknownSupersededMemory
} from "./domain/errors.ts"
export { SummaryVersion, TraitChange } from "./domain/History.ts"
export { Job, JobKind, JobStatus } from "./domain/Job.ts"
export { Importance, Memory, MemoryId, MemoryType, RecentMemory } from "./domain/Memory.ts"
export { Message, MessageRole } from "./domain/Message.ts"
export {
  addressedNamespace,
  allNamespaces,
  CurrentNamespace,
  DEFAULT_NAMESPACE,
  inNamespace,
  isNamespaceName,
  NAMESPACE_HEADER,
  type NamespaceScope,
  oneNamespace
} from "./domain/Namespace.ts"
export { PerRequestTrait } from "./domain/PerRequestTrait.ts"
// Domain schemas and errors
export { ExternalId, Profile, ProfileId } from "./domain/Profile.ts"
export { Confidence, Trait, TraitKey, TraitSource, TraitValueType } from "./domain/Trait.ts"
export { TraitDefinition } from "./domain/TraitDefinition.ts"
export { EmbeddingConfig } from "./embedding/EmbeddingConfig.ts"
export { ExtractionConfig } from "./extraction/ExtractionConfig.ts"
export { ExtractionModel } from "./extraction/ExtractionModel.ts"
export { ExtractionRepo } from "./extraction/ExtractionRepo.ts"
export { Extractor } from "./extraction/Extractor.ts"
export { ServerConfig } from "./http/ServerConfig.ts"
export { ContextBlock, type RenderedBlock } from "./injection/ContextBlock.ts"
export type { InjectionReceipt, RenderedInjection, RenderedReceipt } from "./injection/receipt.ts"
export { JobQueue } from "./jobs/JobQueue.ts"
/** `ExtractionWorker`: its name before it ran every kind of job. */
export { JobWorker as ExtractionWorker, JobWorker, type WorkerStats } from "./jobs/JobWorker.ts"
export { AuthConfig } from "./keys/AuthConfig.ts"
export { type ImportedMemory, Memories, type MemoryChanges, type NewMemory } from "./memories/Memories.ts"
export {
  type FoundMemory,
  MemorySearch,
  type MemorySearchOptions,
  type MemorySearchResult
} from "./memories/MemorySearch.ts"
export { LoggingConfig, LoggingLive } from "./observability/Logging.ts"
export { TracingConfig } from "./observability/TracingConfig.ts"
export { Completion, type CompletionFailure, type CompletionInput } from "./pipeline/Completion.ts"
export { PassthroughRoutes } from "./pipeline/PassthroughRoutes.ts"
// Plugin API
export {
  type AnyPlugin,
  type ContextItem,
  type ContextSection,
  definePlugin,
  type ExtractContext,
  type ExtractContribution,
  type ForwardContext,
  type InjectContext,
  type Plugin,
  type PluginHooks,
  PluginRejection,
  type RankedMemory,
  type RecordedMessage,
  type ResolveUserContext,
  schemaValueType,
  type TurnContext,
  type ValueType
} from "./plugins/Plugin.ts"
export { PluginConfig } from "./plugins/PluginConfig.ts"
export { PluginFailed, PluginHost } from "./plugins/PluginHost.ts"
export { Ingestion } from "./profileApi/Ingestion.ts"
export { InjectionPreview, type PreviewedInjection } from "./profileApi/InjectionPreview.ts"
export { type ProfileDetail, type ProfileExport, ProfileRecord } from "./profileApi/ProfileRecord.ts"
export {
  type DeletedCounts,
  type ProfilePage,
  Profiles,
  type RemovedProfile
} from "./profiles/Profiles.ts"
export { RateLimitConfig, type RateLimitSettings } from "./ratelimit/RateLimitConfig.ts"
export { RateLimitExceeded, RateLimitScope, RateLimitState } from "./ratelimit/RateLimitExceeded.ts"
export { RateLimiter } from "./ratelimit/RateLimiter.ts"
export { RetrievalConfig } from "./retrieval/RetrievalConfig.ts"
export { SnapshotsRepo } from "./snapshots/SnapshotsRepo.ts"
export { TraitSchema } from "./traits/TraitSchema.ts"
export { Traits } from "./traits/Traits.ts"
export { TraitsConfig } from "./traits/TraitsConfig.ts"
export { TurnsRepo } from "./turns/TurnsRepo.ts"
export { Upstream, type UpstreamReply, type UpstreamTarget } from "./upstream/Upstream.ts"
export { UpstreamConfig, type UpstreamEndpoint, UpstreamProvider } from "./upstream/UpstreamConfig.ts"
export {
  DEFAULT_TOLERANCE_SECONDS,
  SIGNATURE_HEADER,
  signatureHeader,
  type VerifyOptions,
  verifyWebhookSignature
} from "./webhooks/signature.ts"
export { Webhook, WebhookDelivery, WebhookEvent, WebhookEventType } from "./webhooks/Webhook.ts"
export { Webhooks } from "./webhooks/Webhooks.ts"
export { WebhooksConfig } from "./webhooks/WebhooksConfig.ts"
