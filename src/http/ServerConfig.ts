import { Config, Context, Result } from "effect"
import { IpNetwork } from "effect/net"
import { commaList, intBetween, positiveInt, section } from "../config/values.ts"

/** An address (`10.0.0.7`) or a network in CIDR notation (`10.0.0.0/8`, `fd00::/8`). */
const parseNetwork = (entry: string) =>
  IpNetwork.fromString(entry.includes("/") ? entry : `${entry}/${entry.includes(":") ? 128 : 32}`)

/** A browser origin as the `Origin` header sends it: scheme, host and port, no path; or `*`. */
const isOrigin = (entry: string) => {
  if (entry === "*") return true
  if (!URL.canParse(entry)) return false
  const parsed = new URL(entry)
  return (parsed.protocol === "http:" || parsed.protocol === "https:") && parsed.origin === entry
}

/** Where the gateway listens, what a request may be, who may call it from where, and how long shutdown waits. */
export const serverFromEnv = section({
  port: Config.Port("PORT").pipe(Config.withDefault(3100)),
  host: Config.String("HOST").pipe(Config.withDefault("0.0.0.0")),
  apiMaxBodyBytes: positiveInt("API_MAX_BODY_BYTES", 1024 * 1024),
  proxyMaxBodyBytes: positiveInt("MAX_REQUEST_BYTES", 10 * 1024 * 1024),
  maxMessages: positiveInt("MAX_MESSAGES", 1000),
  /** Deepest nesting of arrays and objects accepted in a JSON body. */
  maxJsonDepth: positiveInt("MAX_JSON_DEPTH", 128),
  /** Reverse proxies whose `X-Forwarded-For` names the client (none: the TCP peer is the client). */
  trustedProxies: commaList("TRUSTED_PROXIES", {
    valid: (entry) => Result.isSuccess(parseNetwork(entry)),
    expected: "a comma-separated list of IP addresses or CIDR networks"
  }).pipe(
    Config.map((entries) =>
      entries.flatMap((entry) => {
        const parsed = parseNetwork(entry)
        return Result.isSuccess(parsed) ? [parsed.success] : []
      })
    )
  ),
  /** Browser origins allowed to call `/v1` and `/api` (`CORS_ORIGINS`; `*` for every origin). None: CORS is off. */
  corsOrigins: commaList("CORS_ORIGINS", {
    valid: isOrigin,
    expected: "a comma-separated list of origins such as https://app.example.com (scheme, host, port; no path), or *"
  }),
  /** How long shutdown waits for requests in flight; a stream still running 1 s before the end is ended with an SSE error. */
  shutdownDrainMs: intBetween("SHUTDOWN_DRAIN_MS", { minimum: 1000, maximum: 600_000 }, 15_000)
})

export type ServerSettings = Config.Success<typeof serverFromEnv>

export class ServerConfig extends Context.Service<ServerConfig, ServerSettings>()("gateway/http/ServerConfig") {}
