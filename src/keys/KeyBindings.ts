import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Schema } from "effect"
import { decodeRows } from "../db/sqlResults.ts"
import { UpstreamProvider } from "../upstream/UpstreamConfig.ts"
import { AuthConfig } from "./AuthConfig.ts"
import { configuredSecretBox } from "./secretBox.ts"
import type { BoundUpstream } from "./VirtualKeys.ts"

/**
 * What became of a key's provider key, for work its requests left behind (a turn's extraction):
 * `Bound`: still in force, opened; `Unbound`: the key has none; `Revoked`: the key was revoked and so
 * was every key rotated from it (or its row is gone); `Unopenable`: sealed with another
 * `KEY_ENCRYPTION_KEY` than the gateway's (or the gateway has none).
 */
export type KeyBinding =
  | { readonly _tag: "Bound"; readonly upstream: BoundUpstream }
  | { readonly _tag: "Unbound" }
  /** `provider`: the one it was bound to, `null` when its row is gone. */
  | { readonly _tag: "Revoked"; readonly provider: UpstreamProvider | null }
  | { readonly _tag: "Unopenable" }

const BindingRow = Schema.Struct({
  upstreamProvider: Schema.NullOr(UpstreamProvider),
  upstreamKeySealed: Schema.NullOr(Schema.String),
  live: Schema.Boolean
})

/**
 * The provider key a key held in the database is bound to, read from the database when the request
 * is long gone (another replica, an hour later): the in-memory index (`VirtualKeys`) holds only keys
 * that admit requests now, and is up to a second behind a key made on another replica. Expiry does
 * not end a binding (the turns were made while the key was valid; a rotated key expires at the end of
 * its grace period), revocation does, unless a key rotated from it (which carries the same sealed
 * provider key) is still in force.
 */
export class KeyBindings extends Context.Service<
  KeyBindings,
  {
    readonly of: (keyId: string) => Effect.Effect<KeyBinding>
  }
>()("gateway/keys/KeyBindings") {
  static readonly layer = Layer.effect(
    KeyBindings,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const box = yield* configuredSecretBox((yield* AuthConfig).keyEncryptionKey)

      const of = Effect.fn("KeyBindings.of")(function* (keyId: string) {
        const [row] = yield* sql`
          SELECT k.upstream_provider, k.upstream_key_sealed,
                 (k.revoked_at IS NULL OR EXISTS (
                   SELECT 1 FROM api_keys o
                   WHERE o.namespace = k.namespace AND o.upstream_key_sealed = k.upstream_key_sealed
                     AND o.revoked_at IS NULL)) AS live
          FROM api_keys k WHERE k.id = ${keyId}::uuid`.pipe(Effect.orDie, decodeRows(BindingRow))
        if (row === undefined) return { _tag: "Revoked", provider: null } as const
        if (row.upstreamProvider === null || row.upstreamKeySealed === null) return { _tag: "Unbound" } as const
        if (!row.live) return { _tag: "Revoked", provider: row.upstreamProvider } as const
        const apiKey = box?.open(row.upstreamKeySealed)
        if (apiKey === undefined) return { _tag: "Unopenable" } as const
        return { _tag: "Bound", upstream: { provider: row.upstreamProvider, apiKey } } as const
      })

      return KeyBindings.of({ of })
    })
  )
}
