import { FindMyWay } from "effect/http"
import { adapters } from "../apis/adapters.ts"
import type { PathScope } from "../auth/keyScope.ts"
import { MCP_PATH } from "../mcp/sessionRefusal.ts"
import { METRICS_PATH } from "./metricsPath.ts"

/**
 * What a request's path is, as the router will serve it:
 * - `public`: probes, the API's documentation, the console's page and scripts (no data);
 * - `memory`: a memory route whose body the gateway reads (`/v1/chat/completions`, …);
 * - `conversations`: the Conversations API, whose bodies the gateway reads when it keeps the state;
 * - `passthrough`: every other `/v1` path (the body streamed to the provider unread);
 * - `mcp`: the MCP server;
 * - `management`: `/api`;
 * - `metrics`: `/metrics`, every namespace's figures;
 * - `unknown`: anything else (guarded like the management API: a route added later is never open).
 */
export type PathKind =
  | "public"
  | "memory"
  | "conversations"
  | "passthrough"
  | "mcp"
  | "management"
  | "metrics"
  | "unknown"

export interface PathClass {
  readonly kind: PathKind
}

const SCOPES: Readonly<Record<PathKind, PathScope>> = {
  public: "public",
  memory: "app",
  conversations: "app",
  passthrough: "app",
  mcp: "app",
  management: "admin",
  metrics: "admin",
  unknown: "admin"
}

/** The keys a path of this kind takes. */
export const scopeOf = (path: PathClass): PathScope => SCOPES[path.kind]

/** Paths a browser app calls: the proxy and the management API (health, metrics, docs answer without CORS). */
export const isCorsPath = (path: PathClass) =>
  path.kind === "memory" || path.kind === "conversations" || path.kind === "passthrough" || path.kind === "management"

/**
 * The router's own matcher (the same `FindMyWay`, with the defaults the gateway's router uses), given
 * the prefixes that decide a path's kind. Matching a path here is matching it as the router does:
 * case-insensitively, percent-decoded, with repeated and trailing slashes ignored, an absolute URL
 * reduced to its path, and `;…` cut off. A key's scope decided on the raw text would see `/METRICS`,
 * `/metrics/` or `/%6detrics` as unknown paths while the router serves them as `/metrics`.
 */
const matcher = FindMyWay.make<PathClass>()
const add = (pattern: FindMyWay.PathInput, kind: PathKind) => matcher.all(pattern, { kind })

for (const path of ["/", "/health", "/ready", "/openapi.json", "/docs", "/console"] as const) add(path, "public")
add("/console/*", "public")
add("/v1", "passthrough")
add("/v1/*", "passthrough")
for (const adapter of Object.values(adapters)) {
  add(adapter.path, "memory")
  add(`${adapter.path}/*`, "passthrough")
}
add("/v1/conversations", "conversations")
add("/v1/conversations/*", "conversations")
add(MCP_PATH, "mcp")
add(`${MCP_PATH}/*`, "mcp")
add("/api", "management")
add("/api/*", "management")
add(METRICS_PATH, "metrics")

const UNKNOWN: PathClass = { kind: "unknown" }

/** The kind of a request URL's path (its query ignored), as the router reads it. */
export const classifyPath = (url: string): PathClass => matcher.find("GET", url)?.handler ?? UNKNOWN
