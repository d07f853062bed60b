import { Context, Effect, Result, Schema } from "effect"
import { McpSchema, McpServer } from "effect/ai"
import type { Profile } from "../domain/Profile.ts"
import { decodeHeaderText, parseUserId } from "../domain/UserId.ts"
import { addressedNamespace, currentNamespace, namespacedUser } from "../namespaces/Namespace.ts"
import { PluginHost } from "../plugins/PluginHost.ts"
import { Profiles } from "../profiles/Profiles.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"

/** The profile an MCP request works on: the connection's user, never one a tool call names. */
export class ConnectionProfile extends Context.Service<
  ConnectionProfile,
  {
    readonly profile: Profile
  }
>()("gateway/mcp/ConnectionProfile") {}

/** Why an MCP request has no profile (or may not go on): a JSON-RPC error, with the gateway's code in its message. */
export class ConnectionRefused extends Schema.Error<ConnectionRefused>("ConnectionRefused")({
  ...McpSchema.McpErrorBase.fields,
  _tag: Schema.tag("ConnectionRefused"),
  code: Schema.tag(-32001)
}) {}

const refused = (code: string, message: string) => new ConnectionRefused({ message: `${code}: ${message}` })

/**
 * Finds the connection's profile on every tool call and resource read, as `/v1` finds a request's
 * user: `X-Service-Id` (read as UTF-8), as the `resolveUser` plugins leave it (a signed token, say),
 * held to the user-id rule, within the user's rate limit; created on first use. An app key reaches
 * only the user its connection names: no tool takes a profile.
 */
export const ConnectionProfileMiddleware = McpServer.middleware<{ provides: ConnectionProfile }>()(
  Effect.gen(function* () {
    const host = yield* PluginHost
    const profiles = yield* Profiles
    const limiter = yield* RateLimiter
    return (effect, { headers }) =>
      Effect.gen(function* () {
        const header = headers["x-service-id"]
        const claimed = header === undefined ? undefined : decodeHeaderText(header)
        const resolved = yield* host
          .resolveUser({ headers, body: {}, userId: claimed })
          .pipe(Effect.mapError((error) => refused(error.clientError.code, error.clientError.message)))
        if (resolved === undefined) {
          return yield* refused("missing_user_id", "Name the user in the X-Service-Id header of the MCP connection")
        }
        const userId = parseUserId(resolved)
        if (Result.isFailure(userId)) return yield* refused("invalid_user_id", `X-Service-Id ${userId.failure}`)
        yield* limiter
          .takeUser(namespacedUser(addressedNamespace(yield* currentNamespace), userId.success))
          .pipe(Effect.mapError((error) => refused(error.clientError.code, error.clientError.message)))
        const { profile } = yield* profiles
          .getOrCreate(userId.success)
          .pipe(
            Effect.mapError(() =>
              refused("invalid_user_id", "The user id is the internal id of another profile; use another id")
            )
          )
        return yield* Effect.provideService(effect, ConnectionProfile, { profile })
      })
  })
)
