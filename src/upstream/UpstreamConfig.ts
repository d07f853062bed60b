import { Config, Context, Option, type Redacted, Schema } from "effect"
import { flag, optionalSecret, positiveInt, section, url } from "../config/values.ts"
import { ProviderName } from "../providers/ProviderName.ts"

/** A provider's name, as configuration reads it. */
export const UpstreamProvider = ProviderName
export type UpstreamProvider = ProviderName

/** The providers (`UPSTREAM_*`, `ANTHROPIC_*`) and the deadlines of a call to them. */
export const upstreamFromEnv = section({
  provider: Config.schema(UpstreamProvider, "UPSTREAM_PROVIDER").pipe(Config.withDefault("openai" as const)),
  openaiBaseUrl: url("UPSTREAM_BASE_URL").pipe(Config.withDefault("https://api.openai.com/v1")),
  anthropicBaseUrl: url("ANTHROPIC_BASE_URL").pipe(Config.withDefault("https://api.anthropic.com/v1")),
  apiKey: optionalSecret("UPSTREAM_API_KEY"),
  anthropicApiKey: optionalSecret("ANTHROPIC_API_KEY"),
  connectTimeoutMs: positiveInt("UPSTREAM_CONNECT_TIMEOUT_MS", 10_000),
  firstByteTimeoutMs: positiveInt("UPSTREAM_FIRST_BYTE_TIMEOUT_MS", 600_000),
  idleTimeoutMs: positiveInt("UPSTREAM_IDLE_TIMEOUT_MS", 60_000),
  responsesState: Config.schema(Schema.Literals(["passthrough", "gateway"]), "UPSTREAM_RESPONSES_STATE").pipe(
    Config.withDefault("passthrough" as const)
  ),
  streamUsage: flag("UPSTREAM_STREAM_USAGE", true)
}).pipe(
  Config.map((c) => {
    // UPSTREAM_API_KEY is the default provider's key; the other provider needs X-Upstream-Key.
    const keyFor = (provider: UpstreamProvider) =>
      c.provider === provider ? c.apiKey : Option.none<Redacted.Redacted<string>>()
    return {
      /** The provider a request goes to unless it names another with `X-Upstream-Provider`. */
      provider: c.provider,
      openai: { baseUrl: c.openaiBaseUrl, apiKey: keyFor("openai") },
      // ANTHROPIC_API_KEY serves Anthropic whichever provider is the default (Messages clients, X-Upstream-Provider).
      anthropic: { baseUrl: c.anthropicBaseUrl, apiKey: Option.orElse(c.anthropicApiKey, () => keyFor("anthropic")) },
      /** `UPSTREAM_API_KEY` as set (the endpoints above hold the key each provider is called with). */
      apiKey: c.apiKey,
      connectTimeoutMs: c.connectTimeoutMs,
      /** Until the response headers (non-streaming: the whole answer) arrive. */
      firstByteTimeoutMs: c.firstByteTimeoutMs,
      /** Longest silence between two chunks of a streamed answer. */
      idleTimeoutMs: c.idleTimeoutMs,
      /**
       * Who keeps Responses API state (`previous_response_id`, `store`) for the OpenAI-compatible
       * upstream; a request translated for Anthropic is always the gateway's (Anthropic keeps none).
       */
      responsesState: c.responsesState,
      /**
       * Ask an OpenAI-compatible provider for a stream's usage when the client did not (and hide it
       * from the client): off only for a server that refuses `stream_options` (its streams then count no tokens).
       */
      streamUsage: c.streamUsage
    } as const
  })
)

export type UpstreamSettings = Config.Success<typeof upstreamFromEnv>

/** One configured upstream: where it is and the key used when a request brings none. */
export type UpstreamEndpoint = UpstreamSettings["openai"]

export class UpstreamConfig extends Context.Service<UpstreamConfig, UpstreamSettings>()(
  "gateway/upstream/UpstreamConfig"
) {}
