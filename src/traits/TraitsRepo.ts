import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { decodeRows, type ProfileDeleted, profileDeletedOnForeignKey } from "../db/sqlResults.ts"
import { TraitChange } from "../domain/History.ts"
import type { ProfileId } from "../domain/Profile.ts"
import { Trait, type TraitSource, TraitValueType } from "../domain/Trait.ts"
import { traitsOfProfile } from "../snapshots/traitsOfProfile.ts"

const ValueTypeRow = Schema.Struct({ valueType: TraitValueType })

/** A trait set through the management API, as it is written. */
export interface TraitWrite {
  readonly profileId: ProfileId
  readonly key: string
  /** Already validated against the trait's type. */
  readonly value: unknown
  readonly valueType: TraitValueType
  readonly category: string
  readonly confidence: number
  /**
   * `manual`, unless the write restores a learned trait (an import from an export), which
   * extraction keeps updating as it would have.
   */
  readonly source: TraitSource
  /** Replace a stored value only if it has the same type (an undeclared trait keeps its first type). */
  readonly sameTypeOnly: boolean
}

/** The SQL of traits: rows in, decoded rows out; the rules are in `Traits`. */
export class TraitsRepo extends Context.Service<
  TraitsRepo,
  {
    readonly ofProfile: (profileId: ProfileId) => Effect.Effect<ReadonlyArray<Trait>>
    /** The type of the stored value of a trait, if there is one. */
    readonly valueTypeOf: (profileId: ProfileId, key: string) => Effect.Effect<Option.Option<TraitValueType>>
    /**
     * Writes a trait with its history row (a change by hand: source `manual`) and counts the change
     * for the summary, in one statement; `None` when `sameTypeOnly` kept the stored value.
     */
    readonly put: (write: TraitWrite) => Effect.Effect<Option.Option<Trait>, ProfileDeleted>
    /** Deletes a trait with its history row; false when there was none. */
    readonly remove: (profileId: ProfileId, key: string) => Effect.Effect<boolean>
    /** Every change of one trait, newest first. */
    readonly history: (profileId: ProfileId, key: string) => Effect.Effect<ReadonlyArray<TraitChange>>
  }
>()("gateway/traits/TraitsRepo") {
  static readonly layer = Layer.effect(
    TraitsRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient

      const valueTypeOf = (profileId: ProfileId, key: string) =>
        sql`SELECT value_type FROM traits WHERE profile_id = ${profileId} AND key = ${key}`.pipe(
          Effect.orDie,
          decodeRows(ValueTypeRow),
          Effect.map((rows) => Option.map(Option.fromUndefinedOr(rows[0]), (row) => row.valueType))
        )

      const put = (write: TraitWrite) => {
        const { confidence, key, profileId, source } = write
        const value = sql.json(write.value)
        return sql`
          WITH previous AS (SELECT value FROM traits WHERE profile_id = ${profileId} AND key = ${key}),
          written AS (
            INSERT INTO traits (profile_id, key, value, value_type, category, confidence, source)
            VALUES (${profileId}, ${key}, ${value}, ${write.valueType}, ${write.category}, ${confidence}, ${source})
            ON CONFLICT (profile_id, key) DO UPDATE
              SET value = EXCLUDED.value, value_type = EXCLUDED.value_type, category = EXCLUDED.category,
                  confidence = EXCLUDED.confidence, source = EXCLUDED.source, updated_at = now()
              WHERE ${write.sameTypeOnly ? sql`traits.value_type = EXCLUDED.value_type` : sql`true`}
            RETURNING *
          ),
          history AS (
            INSERT INTO trait_history (profile_id, key, old_value, new_value, confidence, source)
            SELECT ${profileId}, ${key}, (SELECT value FROM previous), ${value}, ${confidence}, 'manual'
            FROM written
          ),
          touched AS (
            UPDATE profiles SET updated_at = now(), changes_since_summary = changes_since_summary + 1
            WHERE id = ${profileId} AND EXISTS (SELECT 1 FROM written)
          )
          SELECT * FROM written`.pipe(
          profileDeletedOnForeignKey,
          decodeRows(Trait),
          Effect.map((rows) => Option.fromUndefinedOr(rows[0]))
        )
      }

      const remove = (profileId: ProfileId, key: string) =>
        sql`
          WITH deleted AS (DELETE FROM traits WHERE profile_id = ${profileId} AND key = ${key} RETURNING value),
            history AS (
              INSERT INTO trait_history (profile_id, key, old_value, new_value, source)
              SELECT ${profileId}, ${key}, value, NULL, 'manual' FROM deleted
            ),
            touched AS (
              UPDATE profiles SET updated_at = now(), changes_since_summary = changes_since_summary + 1
              WHERE id = ${profileId} AND EXISTS (SELECT 1 FROM deleted)
            )
          SELECT 1 FROM deleted`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.length > 0)
        )

      const history = (profileId: ProfileId, key: string) =>
        sql`
          SELECT old_value, new_value, confidence, source, job_id::text AS job_id,
                 to_jsonb(message_ids) AS message_ids, created_at
          FROM trait_history WHERE profile_id = ${profileId} AND key = ${key}
          ORDER BY id DESC`.pipe(Effect.orDie, decodeRows(TraitChange))

      return TraitsRepo.of({
        ofProfile: (profileId) => traitsOfProfile(sql, profileId),
        valueTypeOf,
        put,
        remove,
        history
      })
    })
  )
}
