import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { decodeRows } from "../db/sqlResults.ts"
import type { NamespaceScope } from "../domain/Namespace.ts"
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
  /** The key held in the database creating it (`null`: the environment's admin key). */
  readonly createdBy: string | null
}

/** The SQL of the keys held in the database. */
export class KeysRepo extends Context.Service<
  KeysRepo,
  {
    /** `None` when the creating key was revoked or expired meanwhile: nothing is stored then. */
    readonly insert: (key: NewKey) => Effect.Effect<Option.Option<ApiKey>>
    /** Newest first, revoked ones included; in the scope's namespace, or all of them. */
    readonly list: (scope: NamespaceScope) => Effect.Effect<ReadonlyArray<ApiKey>>
    /**
     * A new key with the settings and creator of a live key of the scope's namespace (every namespace for the global admin), whose own life is cut
     * to `graceSeconds` from now; the keys the old one created move to the new one. `None` if there is no such key
     * (or it is revoked or expired).
     */
    readonly rotate: (
      id: string,
      scope: NamespaceScope,
      graceSeconds: number,
      secret: { readonly secretSha256: string; readonly prefix: string }
    ) => Effect.Effect<Option.Option<ApiKey>>
    /**
     * Revokes a key of the scope's namespace (every namespace for the global admin) and every key it
     * created, transitively; `None` if there is no such key.
     */
    readonly revoke: (id: string, scope: NamespaceScope) => Effect.Effect<Option.Option<ApiKey>>
    /**
     * The ids of a key of the scope's namespace and of its creators, from it up to the one the
     * environment's key made; empty if there is no such key.
     */
    readonly lineage: (id: string, scope: NamespaceScope) => Effect.Effect<ReadonlyArray<string>>
    /** How many live keys each namespace in scope has. */
    readonly countByNamespace: (
      scope: NamespaceScope
    ) => Effect.Effect<ReadonlyArray<{ readonly namespace: string; readonly count: number }>>
    /** Every key not revoked, not expired, and not created (transitively) by a revoked key. */
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
                          expires_at, created_at, revoked_at, created_by::text AS created_by`
      const first = (rows: ReadonlyArray<ApiKey>) => Option.fromUndefinedOr(rows[0])

      return KeysRepo.of({
        // In the same statement as the check that the creator is still live, so a key revoked meanwhile
        // leaves no child behind (a SELECT's parameters have no column to take their type from: cast).
        insert: (key) =>
          sql`
            INSERT INTO api_keys (namespace, scope, label, secret_sha256, prefix, rate_limit_per_minute,
                                  upstream_provider, upstream_key_sealed, expires_at, created_by)
            SELECT ${key.namespace}::text, ${key.scope}::text, ${key.label}::text, ${key.secretSha256}::text,
                   ${key.prefix}::text, ${key.rateLimitPerMinute}::int, ${key.upstream?.provider ?? null}::text,
                   ${key.upstream?.sealedKey ?? null}::text, ${key.expiresAt}::timestamptz, ${key.createdBy}::uuid
            WHERE ${key.createdBy}::uuid IS NULL OR EXISTS (
              SELECT 1 FROM api_keys
              WHERE id = ${key.createdBy}::uuid AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()))
            RETURNING ${columns}`.pipe(Effect.orDie, decodeRows(ApiKey), Effect.map(first)),
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
              RETURNING id, namespace, scope, label, rate_limit_per_minute, upstream_provider, upstream_key_sealed,
                        created_by
            ),
            -- The new key keeps the old one's own expiry ('before' reads it as it was before the update) and
            -- its creator, so revoking that creator still reaches it.
            fresh AS (
              INSERT INTO api_keys (namespace, scope, label, secret_sha256, prefix, rate_limit_per_minute,
                                    upstream_provider, upstream_key_sealed, expires_at, created_by)
              SELECT namespace, scope, label, ${secret.secretSha256}, ${secret.prefix}, rate_limit_per_minute,
                     upstream_provider, upstream_key_sealed, (SELECT expires_at FROM before), created_by
              FROM old
              RETURNING *
            ),
            -- The keys the old one created answer to the new one: they outlive the old secret's grace, and
            -- revoking the new key revokes them.
            moved AS (
              UPDATE api_keys SET created_by = fresh.id FROM fresh, old WHERE api_keys.created_by = old.id
            )
            SELECT ${columns} FROM fresh`.pipe(Effect.orDie, decodeRows(ApiKey), Effect.map(first)),
        // The keys a key created share its namespace: the tree stays within the scope.
        revoke: (id, scope) =>
          sql`
            WITH RECURSIVE tree AS (
              SELECT id FROM api_keys WHERE id = ${id}::uuid AND ${within(scope)}
              UNION
              SELECT child.id FROM api_keys child JOIN tree ON child.created_by = tree.id
            ),
            revoked AS (
              UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
              WHERE id IN (SELECT id FROM tree)
              RETURNING ${columns}
            )
            SELECT * FROM revoked WHERE id = ${id}`.pipe(Effect.orDie, decodeRows(ApiKey), Effect.map(first)),
        lineage: (id, scope) =>
          sql`
            WITH RECURSIVE up AS (
              SELECT id, created_by, 0 AS depth FROM api_keys WHERE id = ${id}::uuid AND ${within(scope)}
              UNION ALL
              SELECT creator.id, creator.created_by, up.depth + 1 FROM api_keys creator JOIN up ON creator.id = up.created_by
            )
            SELECT id::text AS id FROM up ORDER BY depth`.pipe(
            Effect.orDie,
            decodeRows(Schema.Struct({ id: Schema.String })),
            Effect.map((rows) => rows.map((row) => row.id))
          ),
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
        // Walked down from the keys the environment's key made: a key under a revoked one is refused even if
        // its own revocation lost a race with its creation.
        active: sql`
          WITH RECURSIVE live AS (
            SELECT id FROM api_keys WHERE created_by IS NULL AND revoked_at IS NULL
            UNION ALL
            SELECT child.id FROM api_keys child JOIN live ON child.created_by = live.id WHERE child.revoked_at IS NULL
          )
          SELECT id::text AS id, namespace, scope, secret_sha256, rate_limit_per_minute, upstream_provider,
                 upstream_key_sealed, expires_at
          FROM api_keys JOIN live USING (id)
          WHERE expires_at IS NULL OR expires_at > now()`.pipe(Effect.orDie, decodeRows(ActiveKey))
      })
    })
  )
}
