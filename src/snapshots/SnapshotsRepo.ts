import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { decodeRows } from "../db/sqlResults.ts"
import { MemorySource, MemoryType } from "../domain/Memory.ts"
import { memoryText } from "../domain/memoryText.ts"
import { Profile } from "../domain/Profile.ts"
import type { Trait } from "../domain/Trait.ts"
import { Embedder } from "../embedding/Embedder.ts"
import { currentVector } from "../embedding/VectorsRepo.ts"
import { bytesOf } from "../embedding/vectors.ts"
import { buildMemoryIndex, type IndexedMemory, type MemoryIndex } from "../retrieval/MemoryIndex.ts"
import { type Terms, termsOf } from "../retrieval/terms.ts"
import { traitsOfProfile } from "./traitsOfProfile.ts"

/** How many memory texts keep their terms between loads. */
const REMEMBERED_TERMS = 50_000

/** Everything injection needs about a profile; cached between requests. */
export interface ProfileSnapshot {
  readonly profile: Profile
  readonly traits: ReadonlyArray<Trait>
  /**
   * Its current memories, indexed for ranking: neither superseded nor past their `expires_at` (an expired
   * one is left out before the retention sweep removes it).
   */
  readonly memories: MemoryIndex
  /**
   * How many times the profile lost a memory or a trait, or had a memory rewritten: context kept under
   * another count may hold what went, and is not sent again (`ContextBlocksRepo`).
   */
  readonly forgetting: number
}

/** The profile row as a snapshot reads it: the profile, and how many times it forgot something. */
const SnapshotProfile = Schema.Struct({
  ...Profile.fields,
  forgetting: Schema.Int
})

const CandidateRow = Schema.Struct({
  id: Schema.String,
  content: Schema.String,
  type: MemoryType,
  importance: Schema.Number,
  decayFactor: Schema.Number,
  createdAt: Schema.Date,
  lastAccessedAt: Schema.NullOr(Schema.Date),
  reinforcedAt: Schema.NullOr(Schema.Date),
  occurredAt: Schema.NullOr(Schema.Date),
  cues: Schema.Array(Schema.String),
  tags: Schema.Array(Schema.String),
  metadata: Schema.Record(Schema.String, Schema.Unknown),
  category: Schema.NullOr(Schema.String),
  source: MemorySource,
  expiresAt: Schema.NullOr(Schema.Date),
  scale: Schema.NullOr(Schema.Number),
  vector: Schema.NullOr(Schema.Uint8Array)
})
const decodeCandidates = Schema.decodeUnknownEffect(Schema.Array(CandidateRow))

/** What injection reads about a profile from the database. */
export class SnapshotsRepo extends Context.Service<
  SnapshotsRepo,
  {
    /**
     * The profile as it is now (its row read again with the rest, so a snapshot never pairs a summary
     * read before a change with traits read after it), its traits and all its current memories, with
     * their terms and vectors. `None` once the profile is erased.
     */
    readonly snapshot: (profile: Profile) => Effect.Effect<Option.Option<ProfileSnapshot>>
    /** The namespace's shared profile (`SHARED_PROFILE_ID`), if it has one. */
    readonly sharedProfile: (namespace: string) => Effect.Effect<Option.Option<Profile>>
    /** Marks memories as used, in one statement. */
    readonly touch: (memoryIds: ReadonlyArray<string>) => Effect.Effect<void>
  }
>()("gateway/snapshots/SnapshotsRepo") {
  static readonly layer = Layer.effect(
    SnapshotsRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const model = (yield* Embedder).model

      // A profile is read again after every change (extraction adds a memory, the cache drops the
      // profile): its other memories' texts are the same, so their terms are reused, not recomputed.
      const remembered = new Map<string, Terms>()
      const termsOfContent = (content: string) => {
        let found = remembered.get(content)
        if (found === undefined) {
          found = termsOf(content)
          if (remembered.size >= REMEMBERED_TERMS) remembered.delete(remembered.keys().next().value!)
          remembered.set(content, found)
        }
        return found
      }

      const vectors = model === undefined ? sql`NULL::float8 AS scale, NULL::bytea AS vector` : sql`v.scale, v.vector`
      const vectorJoin = model === undefined ? sql`` : currentVector(sql, model)

      const snapshot = Effect.fn("SnapshotsRepo.snapshot")(function* (profile: Profile) {
        const [current, traits, rows] = yield* Effect.all(
          [
            sql`SELECT * FROM profiles WHERE id = ${profile.id}`.pipe(Effect.orDie, decodeRows(SnapshotProfile)),
            traitsOfProfile(sql, profile.id),
            sql`
            SELECT m.id, m.content, m.type, m.importance, m.decay_factor, m.created_at, m.last_accessed_at,
                   m.reinforced_at, m.occurred_at, m.cues, m.tags, m.metadata, m.category, m.source, m.expires_at, ${vectors}
            FROM memories m ${vectorJoin}
            WHERE m.profile_id = ${profile.id} AND m.superseded_by IS NULL
              -- Expired but not swept yet: never injected.
              AND (m.expires_at IS NULL OR m.expires_at > now())
            ORDER BY m.created_at, m.id`.pipe(Effect.flatMap(decodeCandidates), Effect.orDie)
          ],
          { concurrency: 3 }
        )
        if (current.length === 0) return Option.none<ProfileSnapshot>()
        const indexed = rows.map(
          (row): IndexedMemory => ({
            memory: {
              id: row.id,
              content: row.content,
              type: row.type,
              importance: row.importance,
              decayBase: row.decayFactor,
              createdAt: row.createdAt.getTime(),
              lastAccessedAt: row.lastAccessedAt?.getTime() ?? null,
              reinforcedAt: row.reinforcedAt?.getTime() ?? null,
              occurredAt: row.occurredAt?.getTime() ?? null,
              cues: row.cues,
              tags: row.tags,
              metadata: row.metadata,
              category: row.category,
              source: row.source,
              expiresAt: row.expiresAt?.getTime() ?? null
            },
            terms: termsOfContent(memoryText(row.content, row.cues)),
            vector:
              row.vector === null || row.scale === null ? undefined : { bytes: bytesOf(row.vector), scale: row.scale }
          })
        )
        const { forgetting, ...row } = current[0]!
        return Option.some<ProfileSnapshot>({
          profile: new Profile(row),
          traits,
          memories: buildMemoryIndex(indexed, model),
          forgetting
        })
      })

      const touch = Effect.fn("SnapshotsRepo.touch")(function* (memoryIds: ReadonlyArray<string>) {
        if (memoryIds.length === 0) return
        yield* sql`
          UPDATE memories SET last_accessed_at = now()
          WHERE id IN (SELECT jsonb_array_elements_text(${sql.json(memoryIds)})::uuid)`.pipe(Effect.orDie)
      })

      // Through the unique partial index `profiles_shared_idx`.
      const sharedProfile = (namespace: string) =>
        sql`SELECT * FROM profiles WHERE namespace = ${namespace} AND shared`.pipe(
          Effect.orDie,
          decodeRows(Profile),
          Effect.map((rows) => Option.fromUndefinedOr(rows[0]))
        )

      return SnapshotsRepo.of({ snapshot, sharedProfile, touch })
    })
  ).pipe(Layer.provide([Embedder.layer]))
}
