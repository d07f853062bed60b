import type { PgClient } from "@effect/sql-pg"
import type { AppConfigShape } from "../config/AppConfig.ts"

/**
 * A memory's decay factor, computed when it is read: the stored base factor halved for every
 * half-life (by memory type) since the memory was last created, used or reinforced.
 */
export const decayedFactor = (sql: PgClient.PgClient, halfLives: AppConfigShape["memoryHalfLifeDays"]) =>
  sql`(decay_factor * power(0.5,
    extract(epoch FROM now() - greatest(created_at, last_accessed_at, reinforced_at)) / 86400.0
    / (CASE type WHEN 'fact' THEN ${halfLives.fact}::float8
                 WHEN 'preference' THEN ${halfLives.preference}::float8
                 WHEN 'event' THEN ${halfLives.event}::float8
                 ELSE ${halfLives.context}::float8 END)))`

/** The columns of a Memory record, with the decay factor as of now. */
export const memoryColumns = (sql: PgClient.PgClient, halfLives: AppConfigShape["memoryHalfLifeDays"]) =>
  sql`id, content, type, importance, ${decayedFactor(sql, halfLives)} AS decay_factor, created_at, last_accessed_at,
       cues, occurred_at, superseded_by`
