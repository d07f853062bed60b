import { randomBytes } from "node:crypto"
import { assert, layer } from "@effect/vitest"
import { DateTime, Effect, Layer } from "effect"
import { allNamespaces, oneNamespace } from "../../src/domain/Namespace.ts"
import { type KeyRequest, secretDigest, VirtualKeys } from "../../src/keys/VirtualKeys.ts"
import * as TestDatabase from "../support/database.ts"

/** A namespace no other test of the file uses: the file shares one database. */
const freshNamespace = () => `keys-${randomBytes(4).toString("hex")}`

/** One fresh namespace as a caller acting in it sees it (its name at hand). */
const freshScope = () => ({ _tag: "One", name: freshNamespace() }) as const

const appKey: KeyRequest = {
  namespace: undefined,
  scope: "app",
  label: undefined,
  rateLimitPerMinute: undefined,
  upstream: undefined,
  expiresAt: undefined
}

/** The key a secret admits requests as, if any: what the server's middleware reads. */
const admitted = (secret: string) => VirtualKeys.use((keys) => Effect.succeed(keys.match(secretDigest(secret))))

layer(VirtualKeys.layerTest.pipe(Layer.provideMerge(TestDatabase.layer)), { timeout: "60 seconds" })(
  "VirtualKeys",
  (it) => {
    it.effect("creates a key whose secret admits requests in its namespace at once; only its prefix is listed", () =>
      Effect.gen(function* () {
        const keys = yield* VirtualKeys
        const namespace = freshNamespace()
        const caller = oneNamespace(namespace)
        const { apiKey, key } = yield* keys.create({ ...appKey, label: "mobile app" }, caller, undefined)

        assert.isTrue(key.startsWith("pmg_"))
        assert.deepInclude(yield* admitted(key), { id: apiKey.id, namespace, scope: "app", rateLimitPerMinute: null })
        assert.isUndefined(yield* admitted(`${key}x`))
        const listed = yield* keys.list(caller)
        assert.deepStrictEqual(
          listed.map((k) => [k.id, k.label, k.prefix]),
          [[apiKey.id, "mobile app", key.slice(0, 12)]]
        )
        assert.notInclude(JSON.stringify(listed), key)
      })
    )

    it.effect("revokes with a key every key it created, down the line, and refuses them all at once", () =>
      Effect.gen(function* () {
        const keys = yield* VirtualKeys
        const caller = freshScope()
        const root = yield* keys.create({ ...appKey, scope: "admin" }, caller, undefined)
        const child = yield* keys.create({ ...appKey, scope: "admin" }, caller, yield* admitted(root.key))
        const grandchild = yield* keys.create(appKey, caller, yield* admitted(child.key))
        const sibling = yield* keys.create(appKey, caller, undefined)

        // A key held in the database revokes only itself and what it created.
        const refused = yield* keys.revoke(root.apiKey.id, caller, yield* admitted(child.key)).pipe(Effect.flip)
        assert.strictEqual(refused._tag, "NotCreatedByThisKey")
        assert.isDefined(yield* admitted(root.key))

        const revoked = yield* keys.revoke(root.apiKey.id, caller, undefined)
        assert.isNotNull(revoked.revokedAt)
        assert.isUndefined(yield* admitted(root.key))
        assert.isUndefined(yield* admitted(child.key))
        assert.isUndefined(yield* admitted(grandchild.key))
        assert.isDefined(yield* admitted(sibling.key))
        const listed = yield* keys.list(caller)
        assert.sameMembers(
          listed.filter((k) => k.revokedAt !== null).map((k) => k.id),
          [root.apiKey.id, child.apiKey.id, grandchild.apiKey.id]
        )
        assert.deepStrictEqual(yield* keys.countByNamespace(caller), [{ namespace: caller.name, count: 1 }])
      })
    )

    it.effect("keeps a namespace's keys out of another namespace's reach", () =>
      Effect.gen(function* () {
        const keys = yield* VirtualKeys
        const mine = freshNamespace()
        const theirs = freshNamespace()
        // The global admin creates in the namespace it names.
        const { apiKey, key } = yield* keys.create({ ...appKey, namespace: mine }, allNamespaces, undefined)
        assert.strictEqual(apiKey.namespace, mine)

        assert.deepStrictEqual(yield* keys.list(oneNamespace(theirs)), [])
        assert.deepStrictEqual(yield* keys.countByNamespace(oneNamespace(theirs)), [])
        const notFound = yield* keys.revoke(apiKey.id, oneNamespace(theirs), undefined).pipe(Effect.flip)
        assert.strictEqual(notFound._tag, "KeyNotFound")
        const notRotated = yield* keys.rotate(apiKey.id, 0, oneNamespace(theirs), undefined).pipe(Effect.flip)
        assert.strictEqual(notRotated._tag, "KeyNotFound")
        const elsewhere = yield* keys
          .create({ ...appKey, namespace: mine }, oneNamespace(theirs), undefined)
          .pipe(Effect.flip)
        assert.deepInclude(elsewhere, { _tag: "KeyRefused", status: 403, code: "namespace_not_allowed" })

        assert.isDefined(yield* admitted(key))
        assert.includeMembers(
          (yield* keys.list(allNamespaces)).map((k) => k.id),
          [apiKey.id]
        )
      })
    )

    it.effect("rotates a key to a new secret with the same settings; the old one lasts its grace only", () =>
      Effect.gen(function* () {
        const keys = yield* VirtualKeys
        const caller = freshScope()
        const expiresAt = Date.now() + 86_400_000
        const old = yield* keys.create(
          { ...appKey, scope: "admin", label: "ci", rateLimitPerMinute: 60, expiresAt },
          caller,
          undefined
        )
        const child = yield* keys.create(appKey, caller, yield* admitted(old.key))

        const graceful = yield* keys.rotate(old.apiKey.id, 3600, caller, undefined)
        assert.notStrictEqual(graceful.apiKey.id, old.apiKey.id)
        assert.notStrictEqual(graceful.key, old.key)
        assert.deepInclude(graceful.apiKey, {
          namespace: caller.name,
          scope: "admin",
          label: "ci",
          rateLimitPerMinute: 60,
          createdBy: null
        })
        assert.strictEqual(DateTime.toEpochMillis(graceful.apiKey.expiresAt!), expiresAt)
        assert.deepInclude(yield* admitted(graceful.key), { id: graceful.apiKey.id, scope: "admin" })
        assert.isDefined(yield* admitted(old.key))

        // No grace: the secret it replaces stops at once, the new one goes on.
        const sudden = yield* keys.rotate(graceful.apiKey.id, 0, caller, undefined)
        assert.isUndefined(yield* admitted(graceful.key))
        assert.deepInclude(yield* admitted(sudden.key), { id: sudden.apiKey.id, rateLimitPerMinute: 60 })

        // The keys the old one created answer to the new one: revoking it reaches them.
        assert.isDefined(yield* admitted(child.key))
        yield* keys.revoke(sudden.apiKey.id, caller, undefined)
        assert.isUndefined(yield* admitted(child.key))
      })
    )

    it.effect("gives a key no more than the key that creates it", () =>
      Effect.gen(function* () {
        const keys = yield* VirtualKeys
        const caller = freshScope()
        const limited = yield* keys.create({ ...appKey, rateLimitPerMinute: 30 }, caller, undefined)
        const creator = yield* admitted(limited.key)

        const wider = yield* keys.create({ ...appKey, scope: "admin" }, caller, creator).pipe(Effect.flip)
        assert.deepInclude(wider, { _tag: "KeyRefused", code: "exceeds_creator_key", param: "scope" })
        const faster = yield* keys.create({ ...appKey, rateLimitPerMinute: 31 }, caller, creator).pipe(Effect.flip)
        assert.deepInclude(faster, { _tag: "KeyRefused", code: "exceeds_creator_key", param: "rateLimitPerMinute" })

        const inherited = yield* keys.create(appKey, caller, creator)
        assert.deepInclude(inherited.apiKey, { rateLimitPerMinute: 30, createdBy: limited.apiKey.id })
      })
    )
  }
)
