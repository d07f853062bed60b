import { createHash, timingSafeEqual } from "node:crypto"
import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"
import { AuthConfig } from "../keys/AuthConfig.ts"
import { type BoundUpstream, KEY_PREFIX, type VirtualKeyGrant, VirtualKeys } from "../keys/VirtualKeys.ts"

/** `app`: the keys of applications (`SERVICE_API_KEY`); `admin`: operators' keys (`ADMIN_API_KEY`). */
export type KeyScope = "app" | "admin"

export class AuthFailure
  extends Schema.TaggedError<AuthFailure>()("AuthFailure", {
    /** `insufficient_scope` (403): a valid key of the other kind. */
    code: Schema.Literals(["missing_api_key", "invalid_api_key", "insufficient_scope"]),
    message: Schema.String
  })
  implements ClientFacing<401 | 403>
{
  /** With the `WWW-Authenticate` challenge RFC 6750 asks for. */
  get clientError() {
    return this.code === "insufficient_scope"
      ? clientError(403, this.code, this.message, {
          headers: { "www-authenticate": `Bearer error="insufficient_scope"` }
        })
      : clientError(401, this.code, this.message, { headers: { "www-authenticate": "Bearer" } })
  }
}

// Comparing digests keeps the comparison constant-time and independent of the key's length.
const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

interface KnownKey {
  readonly digest: Buffer
  /** A prefix of the key's SHA-256: names the key in rate limits without holding the key. */
  readonly id: string
}

const known = (keys: ReadonlyArray<Redacted.Redacted<string>>): ReadonlyArray<KnownKey> =>
  keys.map((key) => {
    const hash = digest(Redacted.value(key))
    return { digest: hash, id: hash.subarray(0, 8).toString("hex") }
  })

/** Looks at every key whatever matches, so the time taken does not tell which one did. */
const match = (presented: Buffer, keys: ReadonlyArray<KnownKey>): KnownKey | undefined => {
  let found: KnownKey | undefined
  for (const key of keys) {
    if (timingSafeEqual(presented, key.digest) && found === undefined) found = key
  }
  return found
}

const envName = { app: "SERVICE_API_KEY", admin: "ADMIN_API_KEY" } as const

/** A key that admitted a request. */
export interface AdmittedKey {
  /** Names the key in rate limits and logs without holding it. */
  readonly id: string
  /** The namespace a key from the database acts in; `undefined` for the environment's keys. */
  readonly namespace: string | undefined
  /** A key's own limit of requests a minute (keys from the database only). */
  readonly rateLimitPerMinute?: number | undefined
  /** The provider and key the key's requests go with, if it is bound to one (keys from the database only). */
  readonly upstream?: BoundUpstream | undefined
  /** The key held in the database, as the index holds it (`undefined` for the environment's keys). */
  readonly databaseKey?: VirtualKeyGrant | undefined
}

/** The keys held in the database, by the SHA-256 of their secret (hex): `VirtualKeys.match`. */
export type DatabaseKeys = (digest: string) => VirtualKeyGrant | undefined

const noDatabaseKeys: DatabaseKeys = () => undefined

/**
 * The API keys and what each kind admits. App keys admit `/v1`; admin keys admit `/api` and
 * `/metrics`. While no admin key is set, app keys admit everything (a single shared key); while no
 * app key is set, `/v1` is open. Admin keys do not admit `/v1`: an application configured with an
 * admin key fails at once (403) instead of quietly holding the power to read and delete every profile.
 * Keys held in the database (`VirtualKeys`) admit the same paths as their kind, in their namespace;
 * on an open path one still names its namespace. Callers send `Authorization: Bearer <key>`; the
 * scheme is case-insensitive.
 */
export class ServiceAuth extends Context.Service<
  ServiceAuth,
  {
    /** Whether requests of this scope must carry a key. */
    readonly requiresKey: (scope: KeyScope) => boolean
    /** The admitted key (`None` when the scope is open and no known key was sent), or why the request is refused. */
    readonly authorize: (
      scope: KeyScope,
      authorization: string | undefined
    ) => Effect.Effect<Option.Option<AdmittedKey>, AuthFailure>
  }
>()("gateway/auth/ServiceAuth") {
  static readonly make = (
    keys: {
      readonly app: ReadonlyArray<Redacted.Redacted<string>>
      readonly admin: ReadonlyArray<Redacted.Redacted<string>>
    },
    databaseKeys: DatabaseKeys = noDatabaseKeys
  ): ServiceAuth["Service"] => {
    const app = known(keys.app)
    const admin = known(keys.admin)
    // For each scope: the keys it accepts, and the keys of the other kind (a 403, not a 401).
    const rules = {
      app: { accepted: app, other: admin, name: envName.app },
      // Without admin keys, the app keys guard the admin paths too (a single shared key).
      admin:
        admin.length > 0
          ? { accepted: admin, other: app, name: envName.admin }
          : { accepted: app, other: [], name: envName.app }
    } as const
    const wrongKind = {
      app: "This is an admin key (ADMIN_API_KEY); /v1 takes an app key (SERVICE_API_KEY)",
      admin: "This is an app key (SERVICE_API_KEY); the management API and /metrics take an admin key (ADMIN_API_KEY)"
    } as const

    const requiresKey = (scope: KeyScope) => rules[scope].accepted.length > 0

    return ServiceAuth.of({
      requiresKey,
      authorize: (scope, authorization) => {
        const keyed = requiresKey(scope)
        const rule = rules[scope]
        const invalid = keyed
          ? Effect.fail(new AuthFailure({ code: "invalid_api_key", message: "Invalid API key" }))
          : Effect.succeedNone
        if (authorization === undefined || authorization.trim() === "") {
          return keyed
            ? Effect.fail(
                new AuthFailure({
                  code: "missing_api_key",
                  message: `Missing API key: send 'Authorization: Bearer <${rule.name}>'`
                })
              )
            : Effect.succeedNone
        }
        const bearer = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization)
        if (bearer === null) return invalid
        const presented = digest(bearer[1]!)
        if (keyed) {
          const admitted = match(presented, rule.accepted)
          if (admitted !== undefined) return Effect.succeed(Option.some({ id: admitted.id, namespace: undefined }))
          if (match(presented, rule.other) !== undefined) {
            return Effect.fail(new AuthFailure({ code: "insufficient_scope", message: wrongKind[scope] }))
          }
        }
        const stored = databaseKeys(presented.toString("hex"))
        // A key of ours that is revoked, expired or unknown is refused even where no key is needed:
        // served in `default` instead, its requests would land in another namespace than its own.
        if (stored === undefined) {
          return bearer[1]!.startsWith(KEY_PREFIX)
            ? Effect.fail(new AuthFailure({ code: "invalid_api_key", message: "Invalid API key" }))
            : invalid
        }
        if (stored.scope !== scope) {
          return Effect.fail(
            new AuthFailure({
              code: "insufficient_scope",
              message: `This is an ${stored.scope} key of namespace '${stored.namespace}'; ${scope === "app" ? "/v1 and /mcp take an app key" : "the management API takes an admin key"}`
            })
          )
        }
        return Effect.succeed(
          Option.some({
            id: `key:${stored.id}`,
            namespace: stored.namespace,
            rateLimitPerMinute: stored.rateLimitPerMinute ?? undefined,
            upstream: stored.upstream,
            databaseKey: stored
          })
        )
      }
    })
  }

  static readonly layer = Layer.effect(
    ServiceAuth,
    Effect.gen(function* () {
      const config = yield* AuthConfig
      const app = config.serviceApiKeys.length
      const admin = config.adminApiKeys.length
      // Counts only: key values never reach a log.
      if (admin === 0 && app === 0) {
        yield* Effect.logWarning(
          "no SERVICE_API_KEY or ADMIN_API_KEY: /v1, /api and /metrics are open to anyone who can reach the gateway " +
            "(and anyone may create keys with POST /api/keys)"
        )
      } else if (admin > 0 && app === 0) {
        yield* Effect.logWarning(
          "ADMIN_API_KEY is set but SERVICE_API_KEY is not: /v1 is open to anyone who can reach it"
        )
      } else if (app > 0 || admin > 0) {
        yield* Effect.logInfo(
          `API keys: ${app} app key(s)` +
            (admin > 0
              ? `, ${admin} admin key(s) for /api and /metrics`
              : "; no ADMIN_API_KEY, so app keys also admit /api and /metrics")
        )
      }
      const databaseKeys = yield* VirtualKeys
      return ServiceAuth.make({ app: config.serviceApiKeys, admin: config.adminApiKeys }, databaseKeys.match)
    })
  ).pipe(Layer.provide([VirtualKeys.layer]))
}
