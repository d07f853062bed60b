/**
 * The gateway as a library: its layers, services, schemas and the plugin API, to embed the whole
 * service, the management API and proxy routes, or just the profile, trait and memory services in an
 * Effect application.
 */

// The whole service and its parts
export { GatewayLive, type GatewayOptions, GatewayServices, ServicesLive } from "./Gateway.ts"
export { ApiRoutes, EmbeddableRoutes, HttpAppRoutes } from "./http/HttpApp.ts"
export { GatewayRouteMiddleware, NodeServerLive, serveRoutes } from "./http/HttpServerLive.ts"
export { ProxyRoutes } from "./http/ProxyRoutes.ts"
export { PassthroughRoutes } from "./http/PassthroughRoutes.ts"
export { GatewayApi } from "./http/Api.ts"

// Configuration
export {
  AppConfig,
  appConfigFromEnv,
  type AppConfigShape,
  type RateLimitSettings,
  UpstreamProvider,
  type UpstreamEndpoint
} from "./config/AppConfig.ts"
export { LoggingLive } from "./config/Logging.ts"

// Database
export { DatabaseClientLive, MigrationsLive, pgClientOptions } from "./store/Database.ts"
export { EmbeddedPostgres, EmbeddedPostgresError } from "./store/EmbeddedPostgres.ts"
export { migrations } from "./store/migrations.ts"

// Services
export { AuthFailure, type KeyScope, ServiceAuth } from "./auth/ServiceAuth.ts"
export { RateLimiter } from "./ratelimit/RateLimiter.ts"
export { RateLimitExceeded, RateLimitScope, RateLimitState } from "./ratelimit/RateLimitExceeded.ts"
export { rateLimitHeaders, rateLimitResponse } from "./http/RateLimitResponse.ts"
export { Background } from "./background/Background.ts"
export {
  type DeletedCounts,
  type ProfileDetail,
  type ProfileExport,
  type ProfilePage,
  Profiles,
  type RemovedProfile
} from "./profiles/Profiles.ts"
export { Traits } from "./traits/Traits.ts"
export { type ImportedMemory, Memories, type MemoryChanges, type NewMemory } from "./memories/Memories.ts"
export { ContextStore } from "./store/ContextStore.ts"
export { TurnStore } from "./store/TurnStore.ts"
export { JobQueue } from "./jobs/JobQueue.ts"
export { ExtractionStore } from "./store/ExtractionStore.ts"
export { TraitSchema } from "./traits/TraitSchema.ts"
export { Upstream, type UpstreamReply, type UpstreamTarget } from "./upstream/Upstream.ts"
export { Completion, type CompletionFailure, type CompletionInput } from "./pipeline/Completion.ts"
export { ExtractionModel } from "./extraction/ExtractionModel.ts"
export { Extractor } from "./extraction/Extractor.ts"
export { ExtractionWorker } from "./extraction/Worker.ts"
export { PluginHost, PluginFailed } from "./plugins/PluginHost.ts"

// Domain schemas and errors
export { ExternalId, Profile, ProfileId } from "./domain/Profile.ts"
export { Confidence, Trait, TraitKey, TraitSource, TraitValueType } from "./domain/Trait.ts"
export { Importance, Memory, MemoryId, MemoryType, RecentMemory } from "./domain/Memory.ts"
export { Message, MessageRole } from "./domain/Message.ts"
export { Job, JobKind, JobStatus } from "./domain/Job.ts"
export { SummaryVersion, TraitChange } from "./domain/History.ts"
export {
  ExternalIdConflict,
  InvalidTraitValue,
  MemoryNotFound,
  ProfileNotFound,
  TraitNotFound,
  UnknownSupersededMemory
} from "./domain/errors.ts"
export { TraitDefinition } from "./traits/TraitDefinition.ts"
export { PerRequestTrait } from "./traits/PerRequestTrait.ts"

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
