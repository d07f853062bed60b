import type { PgClient } from "@effect/sql-pg"
import { String as Str } from "effect"
import { MemoryType } from "../domain/Memory.ts"
import { DAY_MS, DECAY_PER_HALF_LIFE, FRESHNESS_MOMENTS, type MemoryHalfLives } from "../domain/memoryDecay.ts"

/**
 * The decay rule of `domain/memoryDecay.ts` as a SQL expression over a `memories` row, rendered from
 * the same constants, moments and types, so that ordering and listing in the database agree with
 * ranking in the process (as of the database's `now()`).
 */
export const decayedFactor = (sql: PgClient.PgClient, halfLives: MemoryHalfLives) => {
  const freshAt = sql.csv(FRESHNESS_MOMENTS.map((moment) => sql.literal(Str.camelToSnake(moment))))
  const halfLife = sql.join(
    " ",
    false
  )(MemoryType.literals.map((type) => sql`WHEN ${type} THEN ${halfLives[type]}::float8`))
  return sql`(decay_factor * power(${DECAY_PER_HALF_LIFE}::float8,
    greatest(0, extract(epoch FROM now() - greatest(${freshAt}))) * 1000 / ${DAY_MS}::float8
    / (CASE type ${halfLife} END)))`
}

/** The columns of a Memory record, with the decay factor as of now. */
export const memoryColumns = (sql: PgClient.PgClient, halfLives: MemoryHalfLives) =>
  sql`id, content, type, importance, ${decayedFactor(sql, halfLives)} AS decay_factor, created_at, last_accessed_at,
       cues, occurred_at, superseded_by, tags, metadata, category, source, expires_at`
