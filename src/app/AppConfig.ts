import { Config, Context, Effect, Layer } from "effect"
import { type DeepPartial, deepMerge } from "../config/deepMerge.ts"
import { section } from "../config/values.ts"
import { DatabaseConfig, databaseFromEnv } from "../db/DatabaseConfig.ts"
import { EmbeddingConfig, embeddingFromEnv } from "../embedding/EmbeddingConfig.ts"
import { ExtractionConfig, extractionFromEnv } from "../extraction/ExtractionConfig.ts"
import { ServerConfig, serverFromEnv } from "../http/ServerConfig.ts"
import { PlacementConfig, placementFromEnv } from "../injection/PlacementConfig.ts"
import { AuthConfig, authFromEnv } from "../keys/AuthConfig.ts"
import { LoggingConfig, loggingFromEnv } from "../observability/Logging.ts"
import { TracingConfig, tracingFromEnv } from "../observability/TracingConfig.ts"
import { PluginConfig, pluginFromEnv } from "../plugins/PluginConfig.ts"
import { RateLimitConfig, rateLimitFromEnv } from "../ratelimit/RateLimitConfig.ts"
import { ConversationsConfig, conversationsFromEnv } from "../responses/ConversationsConfig.ts"
import { RetentionConfig, retentionFromEnv } from "../retention/RetentionConfig.ts"
import { RetrievalConfig, retrievalFromEnv } from "../retrieval/RetrievalConfig.ts"
import { RoutingConfig, routingFromEnv } from "../routing/RoutingConfig.ts"
import { ThreadsConfig, threadsFromEnv } from "../threads/ThreadsConfig.ts"
import { TraitsConfig, traitsFromEnv } from "../traits/TraitsConfig.ts"
import { UpstreamConfig, upstreamFromEnv } from "../upstream/UpstreamConfig.ts"
import { UsageConfig, usageFromEnv } from "../usage/UsageConfig.ts"
import { WebhooksConfig, webhooksFromEnv } from "../webhooks/WebhooksConfig.ts"

/**
 * Everything the service reads from its environment, parsed once at start: each module's section,
 * declared in its own folder. A bad value fails the start with a message naming the variable.
 */
export const appConfigFromEnv = section({
  server: serverFromEnv,
  auth: authFromEnv,
  rateLimits: rateLimitFromEnv,
  database: databaseFromEnv,
  upstream: upstreamFromEnv,
  routing: routingFromEnv,
  retrieval: retrievalFromEnv,
  plugins: pluginFromEnv,
  traits: traitsFromEnv,
  logging: loggingFromEnv,
  tracing: tracingFromEnv,
  webhooks: webhooksFromEnv,
  threads: threadsFromEnv,
  retention: retentionFromEnv,
  conversations: conversationsFromEnv,
  placement: placementFromEnv,
  usage: usageFromEnv
}).pipe(
  // The sections whose defaults are another section's values.
  Config.flatMap((independent) =>
    section({
      // Extraction speaks the OpenAI chat format; Anthropic serves it too, under the same base URL.
      extraction: extractionFromEnv({
        baseUrl: independent.upstream[independent.upstream.provider].baseUrl,
        apiKey: independent.upstream.apiKey
      }),
      // The default provider's key is an OpenAI-compatible key only when that provider is OpenAI.
      embeddings: embeddingFromEnv(independent.upstream.openai)
    }).pipe(Config.map((dependent) => ({ ...independent, ...dependent }) as const))
  )
)

export type AppConfigShape = Config.Success<typeof appConfigFromEnv>

/** Every section's service: what a module depends on instead of the whole configuration. */
export type ConfigSection =
  | ServerConfig
  | AuthConfig
  | RateLimitConfig
  | DatabaseConfig
  | UpstreamConfig
  | RoutingConfig
  | ExtractionConfig
  | EmbeddingConfig
  | RetrievalConfig
  | PluginConfig
  | TraitsConfig
  | LoggingConfig
  | TracingConfig
  | WebhooksConfig
  | ThreadsConfig
  | RetentionConfig
  | ConversationsConfig
  | PlacementConfig
  | UsageConfig

const sectionsOf = (config: AppConfigShape): Context.Context<ConfigSection> =>
  Context.make(ServerConfig, config.server).pipe(
    Context.add(AuthConfig, config.auth),
    Context.add(RateLimitConfig, config.rateLimits),
    Context.add(DatabaseConfig, config.database),
    Context.add(UpstreamConfig, config.upstream),
    Context.add(RoutingConfig, config.routing),
    Context.add(ExtractionConfig, config.extraction),
    Context.add(EmbeddingConfig, config.embeddings),
    Context.add(RetrievalConfig, config.retrieval),
    Context.add(PluginConfig, config.plugins),
    Context.add(TraitsConfig, config.traits),
    Context.add(LoggingConfig, config.logging),
    Context.add(TracingConfig, config.tracing),
    Context.add(WebhooksConfig, config.webhooks),
    Context.add(ThreadsConfig, config.threads),
    Context.add(RetentionConfig, config.retention),
    Context.add(ConversationsConfig, config.conversations),
    Context.add(PlacementConfig, config.placement),
    Context.add(UsageConfig, config.usage)
  )

/** The whole configuration, for embedders and the entry point; the gateway's modules read their sections. */
export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("gateway/config/AppConfig") {
  /** Each section as its own service, from the `AppConfig` provided. */
  static readonly sections: Layer.Layer<ConfigSection, never, AppConfig> = Layer.effectContext(
    Effect.map(AppConfig, sectionsOf)
  )

  /** Reads the environment (or whatever `ConfigProvider` is installed); provides its sections too. */
  static readonly layer: Layer.Layer<AppConfig | ConfigSection, Config.ConfigError> = AppConfig.sections.pipe(
    Layer.provideMerge(Layer.effect(AppConfig, appConfigFromEnv))
  )

  /**
   * For embedding and tests: the environment's values with `overrides` laid over them, at any depth
   * (`{ extraction: { concurrency: 0 } }` keeps the rest of the section); provides the sections too.
   */
  static readonly layerFrom = (
    overrides: DeepPartial<AppConfigShape>
  ): Layer.Layer<AppConfig | ConfigSection, Config.ConfigError> =>
    AppConfig.sections.pipe(
      Layer.provideMerge(
        Layer.effect(
          AppConfig,
          Effect.map(appConfigFromEnv, (fromEnv) => deepMerge(fromEnv, overrides))
        )
      )
    )
}
