import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Schema } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import { lexemesOf } from "../context/lexemes.ts"
import type { CandidateMemory } from "../context/rankMemories.ts"
import { MemoryType } from "../domain/Memory.ts"
import type { Profile } from "../domain/Profile.ts"
import { Trait } from "../domain/Trait.ts"
import { decayedFactor } from "./memoryDecay.ts"

/** How many of a profile's memories (the most important ones) are candidates for injection. */
export const CANDIDATE_MEMORIES = 200

/** How many memory texts keep their stems between loads. */
const REMEMBERED_STEMS = 20_000

/** Everything injection needs about a profile; cached between requests. */
export interface ProfileSnapshot {
  readonly profile: Profile
  readonly traits: ReadonlyArray<Trait>
  readonly memories: ReadonlyArray<CandidateMemory>
}

const CandidateRow = Schema.Struct({
  id: Schema.String,
  content: Schema.String,
  type: MemoryType,
  importance: Schema.Number,
  decayFactor: Schema.Number,
  createdAt: Schema.Date,
  lastAccessedAt: Schema.NullOr(Schema.Date),
  reinforcedAt: Schema.NullOr(Schema.Date)
})

/** What injection reads about a profile from the database. */
export class ContextStore extends Context.Service<ContextStore, {
  /** The profile's traits and its candidate memories (with their English lexemes). */
  readonly snapshot: (profile: Profile) => Effect.Effect<ProfileSnapshot>
  /** Marks memories as used, in one statement. */
  readonly touch: (memoryIds: ReadonlyArray<string>) => Effect.Effect<void>
}>()("gateway/store/ContextStore") {
  static readonly layer = Layer.effect(
    ContextStore,
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const decay = decayedFactor(sql, (yield* AppConfig).memoryHalfLifeDays)

      // A profile is read again after every change (extraction adds a memory, the cache drops the
      // profile): its other memories' texts are the same, so their stems are reused, not recomputed.
      const stems = new Map<string, ReadonlySet<string>>()
      const stemsOf = (content: string) => {
        let found = stems.get(content)
        if (found === undefined) {
          found = lexemesOf(content)
          if (stems.size >= REMEMBERED_STEMS) stems.delete(stems.keys().next().value!)
          stems.set(content, found)
        }
        return found
      }

      const snapshot = Effect.fn("ContextStore.snapshot")(function*(profile: Profile) {
        const [traitRows, memoryRows] = yield* Effect.all([
          sql`SELECT * FROM traits WHERE profile_id = ${profile.id} ORDER BY key`,
          sql`
            SELECT id, content, type, importance, decay_factor, created_at, last_accessed_at, reinforced_at
            FROM memories WHERE profile_id = ${profile.id}
            ORDER BY importance * ${decay} DESC, created_at DESC
            LIMIT ${CANDIDATE_MEMORIES}`
        ], { concurrency: 2 }).pipe(Effect.orDie)
        const traits = yield* Schema.decodeUnknownEffect(Schema.Array(Trait))(traitRows).pipe(Effect.orDie)
        const rows = yield* Schema.decodeUnknownEffect(Schema.Array(CandidateRow))(memoryRows).pipe(Effect.orDie)
        const memories = rows.map((row): CandidateMemory => ({
          id: row.id,
          content: row.content,
          type: row.type,
          importance: row.importance,
          decayBase: row.decayFactor,
          createdAt: row.createdAt.getTime(),
          lastAccessedAt: row.lastAccessedAt?.getTime() ?? null,
          reinforcedAt: row.reinforcedAt?.getTime() ?? null,
          lexemes: stemsOf(row.content)
        }))
        return { profile, traits, memories }
      })

      const touch = Effect.fn("ContextStore.touch")(function*(memoryIds: ReadonlyArray<string>) {
        if (memoryIds.length === 0) return
        yield* sql`
          UPDATE memories SET last_accessed_at = now()
          WHERE id IN (SELECT jsonb_array_elements_text(${sql.json(memoryIds)})::uuid)`.pipe(Effect.orDie)
      })

      return ContextStore.of({ snapshot, touch })
    })
  )
}
