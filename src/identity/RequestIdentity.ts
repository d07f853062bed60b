import { Context, Effect, Layer, Option } from "effect"
import { addressedNamespace, currentNamespace, namespacedUser } from "../domain/Namespace.ts"
import type { Profile } from "../domain/Profile.ts"
import { type InvalidChatRequest, MissingUserId } from "../domain/requestErrors.ts"
import type { PluginRejection } from "../plugins/Plugin.ts"
import { type PluginFailed, PluginHost } from "../plugins/PluginHost.ts"
import { Profiles } from "../profiles/Profiles.ts"
import type { RateLimitExceeded } from "../ratelimit/RateLimitExceeded.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { checkUserId, claimedUserId, takenUserId } from "./userClaim.ts"

/** Whom a request acts for: a user id within the namespace its key admits. */
export interface RequestUser {
  readonly namespace: string
  readonly userId: string
}

/** What a request says of its user. */
export interface IdentityClaim {
  readonly headers: Readonly<Record<string, string | undefined>>
  /** The body a `resolveUser` plugin may read (`{}` for a request without one). */
  readonly body: Readonly<Record<string, unknown>>
  /** The id the request names, read by the user-id rule (`claimedUserId`); `undefined`: none. */
  readonly claimed: string | undefined
}

/** Why a request's user could not be known: a bad id, a plugin's refusal or failure, the user's rate limit. */
export type IdentityFailure = InvalidChatRequest | PluginRejection | PluginFailed | RateLimitExceeded

/**
 * The one way to know who a request is for, on every route that acts for a user (chat completions,
 * Responses and their stored state, Messages, ConversationsRepo, threads, MCP): the namespace of the
 * request's key, and the user id the request names (header and body read by one rule: UTF-8, trimmed,
 * NFC), as the `resolveUser` plugins leave it (a signed identity, say), held to the same rule, within
 * the user's rate limit. A route that needs a user and has none answers `MissingUserId` (400) or the
 * plugin's refusal (401), and never reads or writes across the namespace. The user's profile is found
 * by its external id only: an id shaped like another profile's internal UUID names no one else.
 */
export class RequestIdentity extends Context.Service<
  RequestIdentity,
  {
    /** The request's user, if it or a plugin names one. */
    readonly resolve: (claim: IdentityClaim) => Effect.Effect<Option.Option<RequestUser>, IdentityFailure>
    /**
     * The user of a request whose body names nobody (the state routes, MCP): `X-Service-Id` and the
     * plugins; `MissingUserId` without one.
     */
    readonly require: (
      headers: Readonly<Record<string, string | undefined>>
    ) => Effect.Effect<RequestUser, IdentityFailure | MissingUserId>
    /** The user's profile, if it exists (nothing is created). */
    readonly profileOf: (user: RequestUser) => Effect.Effect<Option.Option<Profile>>
    /** The user's profile, created on first use (400 when the id is another profile's internal id). */
    readonly profileFor: (user: RequestUser) => Effect.Effect<Profile, InvalidChatRequest>
  }
>()("gateway/identity/RequestIdentity") {
  static readonly layer = Layer.effect(
    RequestIdentity,
    Effect.gen(function* () {
      const host = yield* PluginHost
      const limiter = yield* RateLimiter
      const profiles = yield* Profiles

      const resolve = Effect.fnUntraced(function* (claim: IdentityClaim) {
        const resolved = yield* host.resolveUser({ headers: claim.headers, body: claim.body, userId: claim.claimed })
        if (resolved === undefined) return Option.none<RequestUser>()
        // A plugin's answer meets the same rule as the request's own id.
        const userId = resolved === claim.claimed ? resolved : yield* checkUserId(resolved, "the resolved user id")
        const namespace = addressedNamespace(yield* currentNamespace)
        yield* limiter.takeUser(namespacedUser(namespace, userId))
        return Option.some<RequestUser>({ namespace, userId })
      })

      const require = Effect.fnUntraced(function* (headers: Readonly<Record<string, string | undefined>>) {
        const user = yield* resolve({ headers, body: {}, claimed: yield* claimedUserId(headers) })
        if (Option.isNone(user)) return yield* new MissingUserId({})
        return user.value
      })

      return RequestIdentity.of({
        resolve,
        require,
        profileOf: (user) => profiles.ofUser(user.userId),
        profileFor: (user) =>
          profiles.getOrCreate(user.userId).pipe(
            Effect.map(({ profile }) => profile),
            Effect.mapError(takenUserId)
          )
      })
    })
  ).pipe(Layer.provide([Profiles.layer, RateLimiter.layer]))
}
