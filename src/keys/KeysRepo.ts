import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { NamespaceScope } from "../namespaces/Namespace.ts"
import { decodeRows } from "../profiles/sqlResults.ts"
import { UpstreamProvider } from "../upstream/UpstreamConfig.ts"
import { ApiKey, ApiKeyScope } from "./ApiKey.ts"

/** A key that admits requests now: what the in-memory index holds. */
export const ActiveKey = Schema.Struct({
  id: Schema.String,
  namespace: Schema.String,
  scope: ApiKeyScope,
  secretSha256: Schema.String,
  rateLimitPerMinute: Schema.NullOr(Schema.Int),
  upstreamProvider: Schema.NullOr(UpstreamProvider),
  upstreamKeySealed: Schema.NullOr(Schema.String),
  expiresAt: Schema.NullOr(Schema.DateTimeUtcFromDate)
})
export type ActiveKey = typeof ActiveKey.Type

export interface NewKey {
  readonly namespace: string
  readonly scope: ApiKeyScope
  readonly label: string | null
  readonly secretSha256: string
  readonly prefix: string
  readonly rateLimitPerMinute: number | null
  readonly upstream: { readonly provider: UpstreamProvider; readonly sealedKey: string } | null
  readonly expiresAt: Date | null
}

/** The SQL of the keys held in the database. */
export class KeysRepo extends Context.Service<
  KeysRepo,
  {
    readonly insert: (key: NewKey) => Effect.Effect<ApiKey>
    /** Newest first, revoked ones included; in the scope's namespace, or all of them. */
    readonly list: (scope: NamespaceScope) => Effect.Effect<ReadonlyArray<ApiKey>>
    /**
     * A new key with the settings of a live key of the scope's namespace (every namespace for the global admin), whose own life is cut
     * to `graceSeconds` from now; `None` if there is no such key (or it is revoked or expired).
     */
    readonly rotate: (
      id: string,
      scope: NamespaceScope,
      graceSeconds: number,
      secret: { readonly secretSha256: string; readonly prefix: string }
    ) => Effect.Effect<Option.Option<ApiKey>>
    /** Revokes a key of the scope's namespace (every namespace for the global admin); `None` if there is no such key. */
    readonly revoke: (id: string, scope: NamespaceScope) => Effect.Effect<Option.Option<ApiKey>>
    /** How many live keys each namespace in scope has. */
    readonly countByNamespace: (
      scope: NamespaceScope
    ) => Effect.Effect<ReadonlyArray<{ readonly namespace: string; readonly count: number }>>
    /** Every key not revoked and not expired. */
    readonly active: Effect.Effect<ReadonlyArray<ActiveKey>>
    /**
     * Changes whenever a key is created (rotation included) or revoked, in whatever order those commit:
     * keys are never deleted, and a revocation only ever sets `revoked_at`. A cheap check before `active`.
     */
    readonly version: Effect.Effect<string>
  }
>()("gateway/keys/KeysRepo") {
  static readonly layer = Layer.effect(
    KeysRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const within = (scope: NamespaceScope) => (scope._tag === "One" ? sql`namespace = ${scope.name}` : sql`true`)
      const columns = sql`id::text AS id, namespace, scope, label, prefix, rate_limit_per_minute, upstream_provider,
                          expires_at, created_at, revoked_at`
      const first = (rows: ReadonlyArray<ApiKey>) => Option.fromUndefinedOr(rows[0])

      return KeysRepo.of({
        insert: (key) =>
          sql`
            INSERT INTO api_keys (namespace, scope, label, secret_sha256, prefix, rate_limit_per_minute,
                                  upstream_provider, upstream_key_sealed, expires_at)
            VALUES (${key.namespace}, ${key.scope}, ${key.label}, ${key.secretSha256}, ${key.prefix},
                    ${key.rateLimitPerMinute}, ${key.upstream?.provider ?? null}, ${key.upstream?.sealedKey ?? null},
                    ${key.expiresAt})
            RETURNING ${columns}`.pipe(
            Effect.orDie,
            decodeRows(ApiKey),
            Effect.map((rows) => rows[0]!)
          ),
        list: (scope) =>
          sql`SELECT ${columns} FROM api_keys WHERE ${within(scope)} ORDER BY created_at DESC, id LIMIT 1000`.pipe(
            Effect.orDie,
            decodeRows(ApiKey)
          ),
        rotate: (id, scope, graceSeconds, secret) =>
          sql`
            WITH before AS (SELECT expires_at FROM api_keys WHERE id = ${id}::uuid),
            old AS (
              UPDATE api_keys
              SET expires_at = least(coalesce(expires_at, 'infinity'), now() + ${graceSeconds} * interval '1 second')
              WHERE id = ${id}::uuid AND ${within(scope)} AND revoked_at IS NULL
                AND (expires_at IS NULL OR expires_at > now())
              RETURNING namespace, scope, label, rate_limit_per_minute, upstream_provider, upstream_key_sealed
            )
            -- The new key keeps the old one's own expiry ('before' reads it as it was before the update).
            INSERT INTO api_keys (namespace, scope, label, secret_sha256, prefix, rate_limit_per_minute,
                                  upstream_provider, upstream_key_sealed, expires_at)
            SELECT namespace, scope, label, ${secret.secretSha256}, ${secret.prefix}, rate_limit_per_minute,
                   upstream_provider, upstream_key_sealed, (SELECT expires_at FROM before)
            FROM old
            RETURNING ${columns}`.pipe(Effect.orDie, decodeRows(ApiKey), Effect.map(first)),
        revoke: (id, scope) =>
          sql`
            UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
            WHERE id = ${id}::uuid AND ${within(scope)}
            RETURNING ${columns}`.pipe(Effect.orDie, decodeRows(ApiKey), Effect.map(first)),
        version: sql`
          SELECT count(*)::text || '/' || count(revoked_at)::text AS version
          FROM api_keys`.pipe(
          Effect.orDie,
          decodeRows(Schema.Struct({ version: Schema.String })),
          Effect.map((rows) => rows[0]?.version ?? "")
        ),
        countByNamespace: (scope) =>
          sql`
            SELECT namespace, count(*)::int AS count FROM api_keys
            WHERE ${within(scope)} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
            GROUP BY namespace`.pipe(
            Effect.orDie,
            decodeRows(Schema.Struct({ namespace: Schema.String, count: Schema.Int }))
          ),
        active: sql`
          SELECT id::text AS id, namespace, scope, secret_sha256, rate_limit_per_minute, upstream_provider,
                 upstream_key_sealed, expires_at
          FROM api_keys
          WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`.pipe(
          Effect.orDie,
          decodeRows(ActiveKey)
        )
      })
    })
  )
}
