import { Context, Effect, Schema } from "effect"
import { McpSchema, McpServer } from "effect/ai"
import type { ClientFacing } from "../domain/ClientError.ts"
import type { Profile } from "../domain/Profile.ts"
import { RequestIdentity } from "../identity/RequestIdentity.ts"

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
 * Finds the connection's profile on every tool call and resource read as every route finds a
 * request's user (`RequestIdentity`): `X-Service-Id` (read as UTF-8), as the `resolveUser` plugins
 * leave it (a signed token, say), held to the user-id rule, within the user's rate limit; created on
 * first use. An app key reaches only the user its connection names: no tool takes a profile.
 */
export const ConnectionProfileMiddleware = McpServer.middleware<{ provides: ConnectionProfile }>()(
  Effect.gen(function* () {
    const identity = yield* RequestIdentity
    const refusedBy = (error: ClientFacing) => refused(error.clientError.code, error.clientError.message)
    return (effect, { headers }) =>
      Effect.gen(function* () {
        const user = yield* identity.require(headers).pipe(Effect.mapError(refusedBy))
        const profile = yield* identity.profileFor(user).pipe(Effect.mapError(refusedBy))
        return yield* Effect.provideService(effect, ConnectionProfile, { profile })
      })
  })
)
