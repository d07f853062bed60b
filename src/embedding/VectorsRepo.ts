import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Schema } from "effect"
import type { Statement } from "effect/sql"
import type { ProfileId } from "../domain/Profile.ts"
import { queueProfileJob } from "../jobs/queueProfileJob.ts"
import type { QuantizedVector } from "./vectors.ts"

/** A memory whose vector is missing or stale, with the hash of the text to embed. */
export interface UnembeddedMemory {
  readonly id: string
  readonly content: string
  readonly cues: ReadonlyArray<string>
  readonly contentHash: string
}

const Unembedded = Schema.Array(
  Schema.Struct({
    id: Schema.String,
    content: Schema.String,
    cues: Schema.Array(Schema.String),
    contentHash: Schema.String
  })
)

/**
 * The hash a memory's vector is kept with: of its content and cues, the text it is embedded as.
 * `alias` names the memories table in the statement.
 */
export const memoryTextHash = (sql: PgClient.PgClient, alias: string) =>
  sql.literal(`md5(${alias}.content || ' ' || ${alias}.cues::text)`)

/** Joins each memory (`m`) to its current vector for `model`, if it has one. */
export const currentVector = (sql: PgClient.PgClient, model: string) =>
  sql`LEFT JOIN memory_vectors v ON v.memory_id = m.id AND v.model = ${model} AND v.content_hash = ${memoryTextHash(sql, "m")}`
const Count = Schema.Array(Schema.Struct({ count: Schema.Int }))

/**
 * Memory vectors in PostgreSQL. A memory needs (re-)embedding when it has no vector for the
 * current model or its text changed since (the stored md5 no longer matches); `embed` jobs work
 * through those a batch at a time, so a backfill resumes where it stopped.
 */
export class VectorsRepo extends Context.Service<
  VectorsRepo,
  {
    /** Memories of the profile without a current vector for `model`, oldest first. */
    readonly unembedded: (
      profileId: ProfileId,
      model: string,
      limit: number
    ) => Effect.Effect<ReadonlyArray<UnembeddedMemory>>
    /** Stores vectors; a memory deleted meanwhile is skipped. */
    readonly write: (
      profileId: ProfileId,
      model: string,
      vectors: ReadonlyArray<{ readonly memory: UnembeddedMemory; readonly vector: QuantizedVector }>
    ) => Effect.Effect<void>
    /** Queues an `embed` job for every profile that has memories without a current vector (at start, after an upgrade or a model change). */
    readonly enqueueBackfill: (model: string) => Effect.Effect<number>
  }
>()("gateway/embedding/VectorsRepo") {
  static readonly layer = Layer.effect(
    VectorsRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient

      const unembedded = Effect.fn("VectorsRepo.unembedded")(function* (
        profileId: ProfileId,
        model: string,
        limit: number
      ) {
        const rows = yield* sql`
          SELECT m.id, m.content, m.cues, ${memoryTextHash(sql, "m")} AS content_hash
          FROM memories m ${currentVector(sql, model)}
          WHERE m.profile_id = ${profileId} AND v.memory_id IS NULL
          ORDER BY m.created_at, m.id
          LIMIT ${limit}`.pipe(Effect.orDie)
        return yield* Schema.decodeUnknownEffect(Unembedded)(rows).pipe(Effect.orDie)
      })

      const write = Effect.fn("VectorsRepo.write")(function* (
        profileId: ProfileId,
        model: string,
        vectors: ReadonlyArray<{ readonly memory: UnembeddedMemory; readonly vector: QuantizedVector }>
      ) {
        if (vectors.length === 0) return
        const values = sql.join(
          ", ",
          false
        )(
          vectors.map(
            ({ memory, vector }) =>
              sql`(${memory.id}::uuid, ${memory.contentHash}, ${vector.scale}::float8, ${bytesParameter(vector)})`
          )
        )
        yield* sql`
          INSERT INTO memory_vectors (memory_id, profile_id, model, dimensions, content_hash, scale, vector)
          SELECT input.memory_id, ${profileId}, ${model}, length(input.vector), input.content_hash, input.scale, input.vector
          FROM (VALUES ${values}) AS input (memory_id, content_hash, scale, vector)
          JOIN memories m ON m.id = input.memory_id
          ON CONFLICT (memory_id) DO UPDATE SET
            model = EXCLUDED.model, dimensions = EXCLUDED.dimensions, content_hash = EXCLUDED.content_hash,
            scale = EXCLUDED.scale, vector = EXCLUDED.vector, created_at = now()`.pipe(Effect.orDie)
      })

      const enqueueBackfill = Effect.fn("VectorsRepo.enqueueBackfill")(function* (model: string) {
        const rows = yield* sql`
          WITH queued AS (
            INSERT INTO extraction_jobs (profile_id, kind, message_ids)
            SELECT p.id, 'embed', '{}' FROM profiles p
            WHERE EXISTS (
                SELECT 1 FROM memories m ${currentVector(sql, model)}
                WHERE m.profile_id = p.id AND v.memory_id IS NULL)
              AND NOT EXISTS (
                SELECT 1 FROM extraction_jobs j WHERE j.profile_id = p.id AND j.kind = 'embed' AND j.status = 'pending')
            RETURNING 1
          )
          SELECT count(*)::int AS count FROM queued`.pipe(Effect.orDie)
        const [row] = yield* Schema.decodeUnknownEffect(Count)(rows).pipe(Effect.orDie)
        return row?.count ?? 0
      })

      return VectorsRepo.of({ unembedded, write, enqueueBackfill })
    })
  )
}

/** The statement part that queues the profile's `embed` job (`queueProfileJob`). */
export const queueEmbedding = (sql: PgClient.PgClient, profileId: string, condition?: Statement.Fragment) =>
  queueProfileJob(sql, "embed", profileId, condition)

/** A vector's bytes as a bytea parameter. */
export const bytesParameter = (vector: QuantizedVector): Uint8Array =>
  new Uint8Array(vector.bytes.buffer, vector.bytes.byteOffset, vector.bytes.byteLength)
