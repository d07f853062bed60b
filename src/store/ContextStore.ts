import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Schema } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import { MemoryType } from "../domain/Memory.ts"
import type { ProfileId } from "../domain/Profile.ts"
import { Trait } from "../domain/Trait.ts"
import { decayedFactor } from "./memoryDecay.ts"

export class RankedMemory extends Schema.Class<RankedMemory>("RankedMemory")({
  id: Schema.String,
  content: Schema.String,
  type: MemoryType,
  score: Schema.Number
}) {}

/** The full-text rank at which relevance counts as one half (one matching word scores about 0.67). */
const RELEVANCE_HALF_POINT = 0.05

/** Longest query text taken from the user's message for relevance ranking. */
const MAX_QUERY_CHARACTERS = 2000

/**
 * What injection reads about a profile: its traits and its most relevant memories.
 *
 * A memory's score is
 *   relevanceWeight × rank / (rank + 0.05) + importanceWeight × importance × decayFactor (as of now)
 *     + recencyWeight × 0.5^(ageDays / recencyHalfLifeDays)
 * where rank is PostgreSQL's full-text rank (`ts_rank_cd`, English stemming) of the memory against
 * any word of the latest user message, and age counts from the memory's creation.
 */
export class ContextStore extends Context.Service<ContextStore, {
  readonly load: (profileId: ProfileId, query: string) => Effect.Effect<{
    readonly traits: ReadonlyArray<Trait>
    readonly memories: ReadonlyArray<RankedMemory>
  }>
  /** Marks memories as used, in one statement. */
  readonly touch: (memoryIds: ReadonlyArray<string>) => Effect.Effect<void>
}>()("gateway/store/ContextStore") {
  static readonly layer = Layer.effect(
    ContextStore,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const config = yield* AppConfig
      const weights = config.injection
      const decay = decayedFactor(sql, config.memoryHalfLifeDays)

      const rankedMemories = (profileId: ProfileId, query: string) =>
        sql`
          WITH q AS (
            SELECT to_tsquery('simple', coalesce(string_agg(quote_literal(lexeme), ' | '), '')) AS query
            FROM unnest(tsvector_to_array(to_tsvector('english', ${query.slice(0, MAX_QUERY_CHARACTERS)}))) AS lexeme
          ),
          ranked AS (
            SELECT id, content, type, importance, ${decay} AS decay, created_at,
                   ts_rank_cd(to_tsvector('english', content), q.query) AS rank
            FROM memories, q
            WHERE profile_id = ${profileId}
          )
          SELECT id, content, type,
            ${weights.relevanceWeight}::float8 * (rank / (rank + ${RELEVANCE_HALF_POINT}::float8))
              + ${weights.importanceWeight}::float8 * importance * decay
              + ${weights.recencyWeight}::float8
                * power(0.5, extract(epoch FROM now() - created_at) / 86400.0 / ${weights.recencyHalfLifeDays}::float8)
              AS score
          FROM ranked
          ORDER BY score DESC, created_at DESC, id
          LIMIT ${weights.maxMemories}`

      const load = Effect.fn("ContextStore.load")(function*(profileId: ProfileId, query: string) {
        const [traitRows, memoryRows] = yield* Effect.all([
          sql`SELECT * FROM traits WHERE profile_id = ${profileId} ORDER BY key`,
          rankedMemories(profileId, query)
        ], { concurrency: 2 }).pipe(Effect.orDie)
        return {
          traits: yield* Schema.decodeUnknownEffect(Schema.Array(Trait))(traitRows).pipe(Effect.orDie),
          memories: yield* Schema.decodeUnknownEffect(Schema.Array(RankedMemory))(memoryRows).pipe(Effect.orDie)
        }
      })

      const touch = Effect.fn("ContextStore.touch")(function*(memoryIds: ReadonlyArray<string>) {
        if (memoryIds.length === 0) return
        yield* sql`UPDATE memories SET last_accessed_at = now() WHERE ${sql.in("id", memoryIds)}`.pipe(
          Effect.orDie
        )
      })

      return ContextStore.of({ load, touch })
    })
  )
}
