import type { ApiKeyScope } from "./ApiKey.ts"

/**
 * What a key's powers are, as far as the keys it creates are concerned. `null`: no expiry, no limit of
 * its own. Times are epoch milliseconds.
 */
export interface KeyPowers {
  readonly scope: ApiKeyScope
  readonly expiresAt: number | null
  readonly rateLimitPerMinute: number | null
}

/** What a create request asks for: `undefined` is left out (inherited from the creator), `null` is asked for "none". */
export interface RequestedPowers {
  readonly scope: ApiKeyScope
  readonly expiresAt: number | null | undefined
  readonly rateLimitPerMinute: number | null | undefined
}

/** Which power a child would have beyond its creator's, and a message that says so. */
export interface Exceeded {
  readonly param: "scope" | "expiresAt" | "rateLimitPerMinute"
  readonly message: string
}

/** An admin key may create app and admin keys; an app key (which never reaches `/api`) app keys at most. */
const SCOPE_RANK: Readonly<Record<ApiKeyScope, number>> = { app: 0, admin: 1 }

const iso = (millis: number) => new Date(millis).toISOString()

/**
 * The powers a new key gets: what was asked for, and what was left out taken from the creator (a key
 * held in the database). `creator` undefined is the environment's admin key (or an open admin path):
 * the root, which passes nothing on, so what is left out is "none".
 */
export const inheritedPowers = (creator: KeyPowers | undefined, requested: RequestedPowers): KeyPowers => ({
  scope: requested.scope,
  expiresAt: requested.expiresAt === undefined ? (creator?.expiresAt ?? null) : requested.expiresAt,
  rateLimitPerMinute:
    requested.rateLimitPerMinute === undefined ? (creator?.rateLimitPerMinute ?? null) : requested.rateLimitPerMinute
})

/**
 * The first power `child` would have beyond `creator`'s, if any: a wider scope, a later expiry (or
 * none, under a creator that has one), a higher limit (or none, under a creator that has one).
 * The root (`undefined`) limits nothing.
 */
export const exceededPower = (creator: KeyPowers | undefined, child: KeyPowers): Exceeded | undefined => {
  if (creator === undefined) return undefined
  if (SCOPE_RANK[child.scope] > SCOPE_RANK[creator.scope])
    return {
      param: "scope",
      message: `This is an ${creator.scope} key; the keys it creates may not be ${child.scope} keys`
    }
  if (creator.expiresAt !== null && (child.expiresAt === null || child.expiresAt > creator.expiresAt))
    return {
      param: "expiresAt",
      message:
        `This key expires at ${iso(creator.expiresAt)}; a key it creates may not outlive it ` +
        `(expiresAt at most ${iso(creator.expiresAt)}, or left out to inherit it)`
    }
  if (
    creator.rateLimitPerMinute !== null &&
    (child.rateLimitPerMinute === null || child.rateLimitPerMinute > creator.rateLimitPerMinute)
  )
    return {
      param: "rateLimitPerMinute",
      message:
        `This key is limited to ${creator.rateLimitPerMinute} requests a minute; a key it creates may not be allowed ` +
        `more (rateLimitPerMinute at most ${creator.rateLimitPerMinute}, or left out to inherit it)`
    }
  return undefined
}
