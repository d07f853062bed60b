import { Schema } from "effect"
import { UpstreamProvider } from "../upstream/UpstreamConfig.ts"

/** `app`: admits `/v1` and `/mcp` in its namespace; `admin`: the management API for its namespace only. */
export const ApiKeyScope = Schema.Literals(["app", "admin"])
export type ApiKeyScope = typeof ApiKeyScope.Type

/** A key held in the database, as listed: never its secret (only its first characters, to recognise it). */
export class ApiKey extends Schema.Class<ApiKey>("ApiKey")({
  id: Schema.String,
  namespace: Schema.String,
  scope: ApiKeyScope,
  label: Schema.NullOr(Schema.String),
  /** The secret's first characters. */
  prefix: Schema.String,
  /** Requests a minute this key may make (on top of the gateway's limits); `null`: only those. */
  rateLimitPerMinute: Schema.NullOr(Schema.Int),
  /** The provider the key's requests go to with a key of their own (never shown); `null`: the gateway's. */
  upstreamProvider: Schema.NullOr(UpstreamProvider),
  expiresAt: Schema.NullOr(Schema.DateTimeUtcFromDate),
  createdAt: Schema.DateTimeUtcFromDate,
  revokedAt: Schema.NullOr(Schema.DateTimeUtcFromDate),
  /** The id of the key held in the database that created it; `null`: the environment's admin key (or an open admin path). */
  createdBy: Schema.NullOr(Schema.String)
}) {}
