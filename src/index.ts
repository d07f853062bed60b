/**
 * The gateway as a library, for an Effect application that embeds it (docs/embedding.md): the whole
 * service (`GatewayLive`, `GatewayServices`, `EmbeddableRoutes`, `GatewayApi`), the configuration
 * (`AppConfig` and each section a module reads), the database (`DatabaseClientLive`, `MigrationsLive`,
 * `pgClientOptions`, `EmbeddedPostgres`), the services behind the management API and the proxy
 * (`Profiles`, `ProfileRecord`, `Traits`, `Memories`, `MemorySearch`, `InjectionPreview`, `Ingestion`,
 * `ContextBlock`, `Completion`, `JobQueue`, `JobWorker`, `Webhooks`), the domain's schemas and errors,
 * namespaces, the plugin API, and webhook signatures. Nothing else: the stores, the relay and the
 * request handling are the gateway's own.
 */

export { GatewayApi } from "./app/Api.ts"
export { AppConfig, type AppConfigShape, type ConfigSection } from "./app/AppConfig.ts"
export { GatewayLive, type GatewayOptions, GatewayServices } from "./app/Gateway.ts"
export { EmbeddableRoutes } from "./app/HttpApp.ts"
export type { DeepPartial } from "./config/deepMerge.ts"
export { DatabaseClientLive, MigrationsLive, pgClientOptions } from "./db/Database.ts"
export { DatabaseConfig } from "./db/DatabaseConfig.ts"
export { EmbeddedPostgres, EmbeddedPostgresError } from "./db/EmbeddedPostgres.ts"
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
export { ExternalId, Profile, ProfileId } from "./domain/Profile.ts"
export { Confidence, Trait, TraitKey, TraitSource, TraitValueType } from "./domain/Trait.ts"
export { TraitDefinition } from "./domain/TraitDefinition.ts"
export { EmbeddingConfig } from "./embedding/EmbeddingConfig.ts"
export { ExtractionConfig } from "./extraction/ExtractionConfig.ts"
export { ServerConfig } from "./http/ServerConfig.ts"
export { ContextBlock, type RenderedBlock } from "./injection/ContextBlock.ts"
export { PlacementConfig } from "./injection/PlacementConfig.ts"
export type { InjectionReceipt, RenderedInjection, RenderedReceipt } from "./injection/receipt.ts"
export { JobQueue } from "./jobs/JobQueue.ts"
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
export { ConversationsConfig } from "./responses/ConversationsConfig.ts"
export { RetentionConfig } from "./retention/RetentionConfig.ts"
export { RetrievalConfig } from "./retrieval/RetrievalConfig.ts"
export { ThreadsConfig } from "./threads/ThreadsConfig.ts"
export { TraitSchema } from "./traits/TraitSchema.ts"
export { Traits } from "./traits/Traits.ts"
export { TraitsConfig } from "./traits/TraitsConfig.ts"
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
