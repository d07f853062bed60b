import { createHash, randomBytes } from "node:crypto"
import { Context, DateTime, Effect, Layer, Option, Redacted, Schema } from "effect"
import { layerDefaults } from "../config/defaults.ts"
import { followVersion } from "../db/repeatInBackground.ts"
import { type ClientFacing, clientError } from "../domain/ClientError.ts"
import { type NamespaceScope, namespaceToCreateIn } from "../domain/Namespace.ts"
import { isUuid } from "../domain/Uuid.ts"
import type { UpstreamProvider } from "../upstream/UpstreamConfig.ts"
import type { ApiKey, ApiKeyScope } from "./ApiKey.ts"
import { AuthConfig, authFromEnv } from "./AuthConfig.ts"
import { type ActiveKey, KeysRepo } from "./KeysRepo.ts"
import { exceededPower, inheritedPowers } from "./keyHierarchy.ts"
import { configuredSecretBox } from "./secretBox.ts"

/** How often each replica checks the keys for changes: a revoked key is refused everywhere within this. */
const CHECK_EVERY = "1 second"

/** The secret's first characters, kept to recognise a key in lists. */
const PREFIX_LENGTH = 12

/** How every key held in the database starts: one that is not (or no longer) valid is refused, even on an open path. */
export const KEY_PREFIX = "pmg_"

/** A new secret, with what the database keeps of it. */
const newSecret = () => {
  const key = `${KEY_PREFIX}${randomBytes(32).toString("base64url")}`
  return { key, secretSha256: secretDigest(key), prefix: key.slice(0, PREFIX_LENGTH) }
}

/** The key as the gateway compares it: the SHA-256 of the secret, in hex. */
export const secretDigest = (secret: string) => createHash("sha256").update(secret, "utf8").digest("hex")

/** A key that admitted a request: its id (for rate limits and logs), namespace and scope. */
export interface VirtualKeyGrant {
  readonly id: string
  readonly namespace: string
  readonly scope: ApiKeyScope
  readonly rateLimitPerMinute: number | null
  /** The provider and key every request of this key goes with, if it is bound to one. */
  readonly upstream: BoundUpstream | undefined
  /** Epoch milliseconds; `null`: never. */
  readonly expiresAt: number | null
}

export interface BoundUpstream {
  readonly provider: UpstreamProvider
  readonly apiKey: Redacted.Redacted<string>
}

export class KeyNotFound
  extends Schema.TaggedError<KeyNotFound>()("KeyNotFound", { id: Schema.String })
  implements ClientFacing<404>
{
  get clientError() {
    return clientError(404, "key_not_found", `No key with id '${this.id}'`)
  }
}

/**
 * A key a caller may not create: for a namespace other than its own, with a bad field, or with more
 * than the creating key has (`exceeds_creator_key`).
 */
export class KeyRefused
  extends Schema.TaggedError<KeyRefused>()("KeyRefused", {
    status: Schema.Literals([400, 403]),
    code: Schema.String,
    message: Schema.String,
    param: Schema.optional(Schema.String)
  })
  implements ClientFacing<400 | 403>
{
  get clientError() {
    return clientError(this.status, this.code, this.message, { param: this.param })
  }
}

/** A key held in the database asked to rotate or revoke a key it did not create (itself excepted). */
export class NotCreatedByThisKey
  extends Schema.TaggedError<NotCreatedByThisKey>()("NotCreatedByThisKey", {
    id: Schema.String,
    action: Schema.Literals(["rotate", "revoke", "set the budget of"])
  })
  implements ClientFacing<403>
{
  get clientError() {
    return clientError(
      403,
      "not_created_by_this_key",
      `Key '${this.id}' was not created by this key: a key held in the database can ${this.action} only itself and the keys it created`
    )
  }
}

export interface KeyRequest {
  readonly namespace: string | undefined
  readonly scope: ApiKeyScope
  readonly label: string | undefined
  /** `undefined`: the creating key's; `null`: none. */
  readonly rateLimitPerMinute: number | null | undefined
  /** A provider and its key to bind the key to (stored encrypted: needs `KEY_ENCRYPTION_KEY`). */
  readonly upstream: { readonly provider: UpstreamProvider; readonly apiKey: string } | undefined
  /** Epoch milliseconds; `undefined`: the creating key's; `null`: never. */
  readonly expiresAt: number | null | undefined
}

/**
 * Keys held in the database (`POST /api/keys`), beside the environment's: each acts in one namespace,
 * as an app key or as the admin of that namespace. The secret is shown once, at creation; only its
 * SHA-256 is stored. Every replica keeps the keys that admit requests in memory (a request's key check
 * reads no database) and checks every second whether they changed: a revoked key is refused by the
 * replica that revoked it at once, and by every other within a second.
 */
export class VirtualKeys extends Context.Service<
  VirtualKeys,
  {
    /** The key with this secret digest, if it admits requests now. */
    readonly match: (digest: string) => VirtualKeyGrant | undefined
    /** The provider key the key with this id is bound to, while the key admits requests (a routes file's `keyId`). */
    readonly boundUpstream: (id: string) => BoundUpstream | undefined
    /**
     * Creates a key in the caller's namespace (the global admin: in every namespace); the secret is in the
     * result only. `creator` is the key held in the database making the request (`undefined`: the
     * environment's admin key, which limits nothing): the new key gets no more than it has.
     */
    readonly create: (
      request: KeyRequest,
      caller: NamespaceScope,
      creator: VirtualKeyGrant | undefined
    ) => Effect.Effect<{ readonly apiKey: ApiKey; readonly key: string }, KeyRefused>
    readonly list: (caller: NamespaceScope) => Effect.Effect<ReadonlyArray<ApiKey>>
    /** How many live keys each namespace in the caller's scope has. */
    readonly countByNamespace: (
      caller: NamespaceScope
    ) => Effect.Effect<ReadonlyArray<{ readonly namespace: string; readonly count: number }>>
    /**
     * A new secret for a live key (same namespace, scope, label, limit, expiry and creator); the old secret
     * stays valid for `graceSeconds` more, so clients can move over without downtime. A key held in the
     * database (`rotator`) rotates only itself and the keys it created: another's new secret would be a
     * key it did not make, that its revocation would not reach.
     */
    readonly rotate: (
      id: string,
      graceSeconds: number,
      caller: NamespaceScope,
      rotator: VirtualKeyGrant | undefined
    ) => Effect.Effect<{ readonly apiKey: ApiKey; readonly key: string }, KeyNotFound | NotCreatedByThisKey>
    /**
     * Revokes a key of the caller's namespace (the global admin: in every namespace) and every key it
     * created, transitively, on every replica. A key held in the database (`revoker`) revokes only
     * itself and the keys it created.
     */
    readonly revoke: (
      id: string,
      caller: NamespaceScope,
      revoker: VirtualKeyGrant | undefined
    ) => Effect.Effect<ApiKey, KeyNotFound | NotCreatedByThisKey>
    /** A key of the caller's namespace that `actor` (a key held in the database) is or created: what it may set a budget on. */
    readonly owned: (
      id: string,
      caller: NamespaceScope,
      actor: VirtualKeyGrant | undefined
    ) => Effect.Effect<ApiKey, KeyNotFound | NotCreatedByThisKey>
  }
>()("gateway/keys/VirtualKeys") {
  static readonly layer = Layer.effect(
    VirtualKeys,
    Effect.gen(function* () {
      const repo = yield* KeysRepo
      const { keyEncryptionKey } = yield* AuthConfig
      const box = yield* configuredSecretBox(keyEncryptionKey)
      let byDigest = new Map<string, VirtualKeyGrant>()
      let byId = new Map<string, VirtualKeyGrant>()
      let version = ""

      /** A key as it admits requests; `undefined` for a bound key whose provider key cannot be opened. */
      const grantOf = (key: ActiveKey): VirtualKeyGrant | undefined => {
        let upstream: BoundUpstream | undefined
        if (key.upstreamProvider !== null && key.upstreamKeySealed !== null) {
          const apiKey = box?.open(key.upstreamKeySealed)
          if (apiKey === undefined) return undefined
          upstream = { provider: key.upstreamProvider, apiKey }
        }
        return {
          id: key.id,
          namespace: key.namespace,
          scope: key.scope,
          rateLimitPerMinute: key.rateLimitPerMinute,
          upstream,
          expiresAt: key.expiresAt === null ? null : DateTime.toEpochMillis(key.expiresAt)
        }
      }

      const reload = Effect.gen(function* () {
        const current = yield* repo.version
        const next: typeof byDigest = new Map()
        let unopened = 0
        for (const key of yield* repo.active) {
          const grant = grantOf(key)
          if (grant === undefined) unopened++
          else next.set(key.secretSha256, grant)
        }
        // Refused rather than sent with the gateway's own provider key.
        if (unopened > 0)
          yield* Effect.logError(
            `${unopened} key(s) bound to a provider key cannot be used: KEY_ENCRYPTION_KEY is not the one they were sealed with`
          )
        byDigest = next
        byId = new Map([...next.values()].map((grant) => [grant.id, grant]))
        version = current
      })
      yield* reload
      // A cheap check each second, a read of the keys only when they changed. (A LISTEN would hold a
      // connection of the pool for good; this costs one small query a second.)
      yield* followVersion({
        version: repo.version,
        reload,
        current: () => version,
        every: CHECK_EVERY,
        failure: "could not read the keys"
      })

      const admitting = (key: VirtualKeyGrant | undefined) =>
        key === undefined || (key.expiresAt !== null && key.expiresAt <= Date.now()) ? undefined : key
      const match = (digest: string) => admitting(byDigest.get(digest))
      const boundUpstream = (id: string) => admitting(byId.get(id))?.upstream

      const refused = (status: 400 | 403, code: string, message: string, param?: string) =>
        new KeyRefused({ status, code, message, ...(param === undefined ? {} : { param }) })

      const create = Effect.fn("VirtualKeys.create")(function* (
        request: KeyRequest,
        caller: NamespaceScope,
        creator: VirtualKeyGrant | undefined
      ) {
        const target = namespaceToCreateIn(request.namespace, caller)
        if ("refused" in target) {
          const { status, code, message } = target.refused
          return yield* refused(status, code, message, "namespace")
        }
        const namespace = target.name
        if (request.expiresAt != null && request.expiresAt <= Date.now()) {
          return yield* refused(400, "invalid_expiry", "expiresAt must be in the future", "expiresAt")
        }
        if (request.upstream !== undefined && box === undefined) {
          return yield* refused(
            400,
            "key_encryption_not_configured",
            "Binding a provider key needs KEY_ENCRYPTION_KEY set on the gateway (it is stored encrypted)",
            "upstream"
          )
        }
        const powers = inheritedPowers(creator, request)
        const exceeded = exceededPower(creator, powers)
        if (exceeded !== undefined) return yield* refused(403, "exceeds_creator_key", exceeded.message, exceeded.param)
        // A key bound to a provider key passes the binding on unless the request names another: the keys
        // it creates never spend the gateway's own provider key.
        const binding =
          request.upstream ??
          (creator?.upstream === undefined
            ? undefined
            : { provider: creator.upstream.provider, apiKey: Redacted.value(creator.upstream.apiKey) })
        const upstream =
          binding === undefined || box === undefined
            ? null
            : { provider: binding.provider, sealedKey: box.seal(binding.apiKey) }
        const { key, ...secret } = newSecret()
        const inserted = yield* repo.insert({
          upstream,
          namespace,
          scope: powers.scope,
          label: request.label ?? null,
          ...secret,
          rateLimitPerMinute: powers.rateLimitPerMinute,
          expiresAt: powers.expiresAt === null ? null : new Date(powers.expiresAt),
          createdBy: creator?.id ?? null
        })
        if (Option.isNone(inserted)) {
          return yield* refused(403, "creator_key_revoked", "This key was revoked or expired while the request ran")
        }
        // Usable on this replica before the answer; the others follow the notification.
        yield* reload
        return { apiKey: inserted.value, key }
      })

      /** Fails unless the key `id` is `actor` or was created by it (transitively). */
      const descends = Effect.fnUntraced(function* (
        id: string,
        caller: NamespaceScope,
        actor: VirtualKeyGrant,
        action: NotCreatedByThisKey["action"]
      ) {
        const lineage = yield* repo.lineage(id, caller)
        if (lineage.length === 0) return yield* new KeyNotFound({ id })
        if (!lineage.includes(actor.id)) return yield* new NotCreatedByThisKey({ id, action })
      })

      const rotate = Effect.fn("VirtualKeys.rotate")(function* (
        id: string,
        graceSeconds: number,
        caller: NamespaceScope,
        rotator: VirtualKeyGrant | undefined
      ) {
        if (!isUuid(id)) return yield* new KeyNotFound({ id })
        if (rotator !== undefined) yield* descends(id, caller, rotator, "rotate")
        const { key, ...secret } = newSecret()
        const rotated = yield* repo.rotate(id, caller, graceSeconds, secret)
        if (Option.isNone(rotated)) return yield* new KeyNotFound({ id })
        yield* reload
        return { apiKey: rotated.value, key }
      })

      const revoke = Effect.fn("VirtualKeys.revoke")(function* (
        id: string,
        caller: NamespaceScope,
        revoker: VirtualKeyGrant | undefined
      ) {
        if (!isUuid(id)) return yield* new KeyNotFound({ id })
        if (revoker !== undefined) yield* descends(id, caller, revoker, "revoke")
        const revoked = yield* repo.revoke(id, caller)
        if (Option.isNone(revoked)) return yield* new KeyNotFound({ id })
        yield* reload
        return revoked.value
      })

      const owned = Effect.fn("VirtualKeys.owned")(function* (
        id: string,
        caller: NamespaceScope,
        actor: VirtualKeyGrant | undefined
      ) {
        if (!isUuid(id)) return yield* new KeyNotFound({ id })
        if (actor !== undefined) yield* descends(id, caller, actor, "set the budget of")
        const key = (yield* repo.list(caller)).find((listed) => listed.id === id)
        if (key === undefined) return yield* new KeyNotFound({ id })
        return key
      })

      return VirtualKeys.of({
        owned,
        match,
        boundUpstream,
        create,
        list: repo.list,
        countByNamespace: repo.countByNamespace,
        rotate,
        revoke
      })
    })
  ).pipe(Layer.provide(KeysRepo.layer))

  /**
   * The live service with its repository on the database you provide, and the configuration's defaults
   * (no `KEY_ENCRYPTION_KEY`: no key can be bound to a provider key). Acts in the namespace scope each
   * call is given. Needs only a `PgClient`.
   */
  static readonly layerTest = VirtualKeys.layer.pipe(Layer.provide(layerDefaults(AuthConfig, authFromEnv)))
}
