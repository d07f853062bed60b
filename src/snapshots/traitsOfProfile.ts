import type { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { decodeRows } from "../db/sqlResults.ts"
import { Trait } from "../domain/Trait.ts"

/**
 * A profile's traits, ordered by key: the one trait SELECT, which the trait, snapshot and extraction
 * stores share. A database failure is a defect (a logged 500).
 */
export const traitsOfProfile = (sql: PgClient.PgClient, profileId: string): Effect.Effect<ReadonlyArray<Trait>> =>
  sql`SELECT * FROM traits WHERE profile_id = ${profileId} ORDER BY key`.pipe(Effect.orDie, decodeRows(Trait))
