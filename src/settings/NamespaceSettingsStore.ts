import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Schema } from "effect"
import { decodeRows } from "../db/sqlResults.ts"
import {
  defaultNamespaceSettings,
  MemoryCategory,
  type NamespaceSettings,
  type NamespaceSettingsInput,
  RetentionPolicy,
  SweepReport
} from "../domain/NamespaceSettings.ts"
import { TraitSchemaFile } from "../domain/TraitSchemaFile.ts"

const SettingsRow = Schema.Struct({
  namespace: Schema.String,
  extractionInstructions: Schema.String,
  memoryCategories: Schema.Array(MemoryCategory),
  traitSchema: Schema.NullOr(TraitSchemaFile),
  retention: RetentionPolicy,
  lastSweep: Schema.NullOr(SweepReport),
  updatedAt: Schema.Date
})

const settingsOf = (row: typeof SettingsRow.Type): NamespaceSettings => ({
  ...row,
  updatedAt: row.updatedAt.toISOString()
})

/** What one namespace's retention sweep needs. */
interface RetentionTarget {
  readonly namespace: string
  readonly retention: RetentionPolicy
}

/**
 * Each namespace's settings (`namespace_settings`), read fresh on every call: extraction jobs read
 * them once per job, so a change applies to the next job on every replica.
 */
export class NamespaceSettingsStore extends Context.Service<
  NamespaceSettingsStore,
  {
    /** The namespace's settings, or the defaults when it set none. */
    readonly get: (namespace: string) => Effect.Effect<NamespaceSettings>
    /**
     * Writes the settings (`merge`: only the fields given, else all of them, absent ones at their
     * default) and applies the retention policy to the namespace's memories whose expiry no caller set.
     */
    readonly write: (
      namespace: string,
      input: NamespaceSettingsInput,
      options: { readonly merge: boolean }
    ) => Effect.Effect<NamespaceSettings>
    /** Changes whenever any namespace's settings are written: a cheap check before reading them. */
    readonly version: Effect.Effect<string>
    /** The namespaces with a trait schema of their own, and it. */
    readonly traitSchemas: Effect.Effect<ReadonlyArray<{ readonly namespace: string; readonly traitSchema: unknown }>>
    /** The namespaces with a retention policy. */
    readonly withRetention: Effect.Effect<ReadonlyArray<RetentionTarget>>
    /** Keeps what a sweep removed, to be shown with the settings. */
    readonly noteSweep: (namespace: string, sweep: SweepReport) => Effect.Effect<void>
  }
>()("gateway/settings/NamespaceSettingsStore") {
  static readonly layer = Layer.effect(
    NamespaceSettingsStore,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient

      const get = Effect.fn("NamespaceSettingsStore.get")(function* (namespace: string) {
        const rows = yield* sql`SELECT * FROM namespace_settings WHERE namespace = ${namespace}`.pipe(
          decodeRows(SettingsRow),
          Effect.orDie
        )
        return rows[0] === undefined ? defaultNamespaceSettings(namespace) : settingsOf(rows[0])
      })

      /** The days a policy gives a memory of its type, as SQL over `m` (NULL: kept). */
      const policyDays = (retention: RetentionPolicy) =>
        sql`(${sql.json(retention)}::jsonb -> 'memoryDays' ->> m.type)::int * interval '1 day'`

      const write = Effect.fn("NamespaceSettingsStore.write")(function* (
        namespace: string,
        input: NamespaceSettingsInput,
        options: { readonly merge: boolean }
      ) {
        const rows = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              // Writes of one namespace's settings take turns: a merge reads what the one before it wrote.
              yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`namespace-settings:${namespace}`}, 0))`
              const before = yield* get(namespace)
              const base = options.merge ? before : defaultNamespaceSettings(namespace)
              const next = {
                extractionInstructions: input.extractionInstructions ?? base.extractionInstructions,
                memoryCategories: input.memoryCategories ?? base.memoryCategories,
                traitSchema: input.traitSchema === undefined ? base.traitSchema : input.traitSchema,
                retention: input.retention ?? base.retention
              }
              const written = yield* sql`
                INSERT INTO namespace_settings
                  (namespace, extraction_instructions, memory_categories, trait_schema, retention, updated_at)
                VALUES (${namespace}, ${next.extractionInstructions}, ${sql.json(next.memoryCategories)},
                        ${next.traitSchema === null ? null : sql.json(next.traitSchema)}, ${sql.json(next.retention)}, now())
                ON CONFLICT (namespace) DO UPDATE SET
                  extraction_instructions = EXCLUDED.extraction_instructions,
                  memory_categories = EXCLUDED.memory_categories, trait_schema = EXCLUDED.trait_schema,
                  retention = EXCLUDED.retention, updated_at = now()
                RETURNING *`
              // A change of the memories' lifetimes moves the expiry of every memory no caller gave one, as
              // the trigger of migration 0029 sets it for new ones: quietly (no webhook event per memory).
              if (
                JSON.stringify(before.retention.memoryDays ?? {}) !== JSON.stringify(next.retention.memoryDays ?? {})
              ) {
                yield* sql`SELECT set_config('gateway.quiet', 'on', true)`
                yield* sql`
                  UPDATE memories m SET expires_at = m.created_at + ${policyDays(next.retention)}
                  FROM profiles p
                  WHERE p.id = m.profile_id AND p.namespace = ${namespace} AND NOT p.shared AND NOT m.expiry_explicit
                    AND m.expires_at IS DISTINCT FROM m.created_at + ${policyDays(next.retention)}`
              }
              return written
            })
          )
          .pipe(decodeRows(SettingsRow), Effect.orDie)
        return settingsOf(rows[0]!)
      })

      const withRetention =
        sql`SELECT namespace, retention FROM namespace_settings WHERE retention <> '{}'::jsonb`.pipe(
          decodeRows(Schema.Struct({ namespace: Schema.String, retention: RetentionPolicy })),
          Effect.orDie
        )

      // Every row's time, not the latest: a write that commits after a later-started one still changes it.
      const version = sql`
        SELECT md5(coalesce(string_agg(namespace || '@' || updated_at::text, ',' ORDER BY namespace), '')) AS version
        FROM namespace_settings`.pipe(
        decodeRows(Schema.Struct({ version: Schema.String })),
        Effect.map((rows) => rows[0]!.version),
        Effect.orDie
      )

      // Decoded by the reader, which checks them against the plugins loaded in its process.
      const traitSchemas = sql`
        SELECT namespace, trait_schema FROM namespace_settings WHERE trait_schema IS NOT NULL`.pipe(
        decodeRows(Schema.Struct({ namespace: Schema.String, traitSchema: Schema.Unknown })),
        Effect.orDie
      )

      const noteSweep = (namespace: string, sweep: SweepReport) =>
        sql`UPDATE namespace_settings SET last_sweep = ${sql.json(sweep)} WHERE namespace = ${namespace}`.pipe(
          Effect.orDie,
          Effect.asVoid
        )

      return NamespaceSettingsStore.of({ get, write, version, traitSchemas, withRetention, noteSweep })
    })
  )
}
