import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Schema } from "effect"
import type { ProfileId } from "../domain/Profile.ts"
import { queueEmbedding } from "../embedding/VectorsRepo.ts"
import { queueProfileJob } from "../jobs/queueProfileJob.ts"

/** A memory written without cues, as the cue writer reads it. */
export interface MemoryWantingCues {
  readonly id: string
  readonly content: string
}

const Wanting = Schema.Array(Schema.Struct({ id: Schema.String, content: Schema.String }))
const Written = Schema.Array(Schema.Struct({ written: Schema.Int, settled: Schema.Int }))

/**
 * Memories waiting for the cues the extraction model writes (`cues_wanted`, set when a memory is
 * written through the API or MCP without cues, or its content changes without new ones).
 */
export class CuesRepo extends Context.Service<
  CuesRepo,
  {
    /** The profile's memories waiting for cues, oldest first. */
    readonly wanting: (profileId: ProfileId, limit: number) => Effect.Effect<ReadonlyArray<MemoryWantingCues>>
    /**
     * Stores the cues written for the memories asked about (an empty list keeps what the memory has)
     * and clears their flag, unless the memory's content changed meanwhile (it waits for the next job).
     * Queues the next `cues` job while memories still wait, and with embeddings on the `embed` job
     * for the changed text.
     */
    readonly write: (
      profileId: ProfileId,
      written: ReadonlyArray<{ readonly memory: MemoryWantingCues; readonly cues: ReadonlyArray<string> }>,
      options: { readonly queueEmbedding: boolean }
    ) => Effect.Effect<{ readonly written: number; readonly settled: number }>
  }
>()("gateway/extraction/CuesRepo") {
  static readonly layer = Layer.effect(
    CuesRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient

      const wanting = Effect.fn("CuesRepo.wanting")(function* (profileId: ProfileId, limit: number) {
        const rows = yield* sql`
          SELECT id, content FROM memories
          WHERE profile_id = ${profileId} AND cues_wanted
          ORDER BY created_at, id
          LIMIT ${limit}`.pipe(Effect.orDie)
        return yield* Schema.decodeUnknownEffect(Wanting)(rows).pipe(Effect.orDie)
      })

      const write = Effect.fn("CuesRepo.write")(function* (
        profileId: ProfileId,
        written: ReadonlyArray<{ readonly memory: MemoryWantingCues; readonly cues: ReadonlyArray<string> }>,
        options: { readonly queueEmbedding: boolean }
      ) {
        const input = written.map(({ memory, cues }) => ({ id: memory.id, content: memory.content, cues }))
        const changed = sql`EXISTS (SELECT 1 FROM updated WHERE written)`
        const rows = yield* sql`
          WITH input AS (
            SELECT * FROM jsonb_to_recordset(${sql.json(input)}) AS x(id uuid, content text, cues jsonb)
          ),
          updated AS (
            UPDATE memories m
            SET cues = CASE WHEN jsonb_array_length(input.cues) > 0 THEN input.cues ELSE m.cues END, cues_wanted = false
            FROM input
            WHERE m.id = input.id AND m.profile_id = ${profileId} AND m.cues_wanted AND m.content = input.content
            RETURNING m.id, jsonb_array_length(input.cues) > 0 AS written
          ),
          next AS (${queueProfileJob(
            sql,
            "cues",
            profileId,
            sql`EXISTS (SELECT 1 FROM memories WHERE profile_id = ${profileId} AND cues_wanted
                          AND id NOT IN (SELECT id FROM updated))`
          )})
          ${options.queueEmbedding ? sql`, embed AS (${queueEmbedding(sql, profileId, changed)})` : sql``}
          SELECT (count(*) FILTER (WHERE written))::int AS written, count(*)::int AS settled FROM updated`.pipe(
          Effect.orDie
        )
        const [counts] = yield* Schema.decodeUnknownEffect(Written)(rows).pipe(Effect.orDie)
        return counts ?? { written: 0, settled: 0 }
      })

      return CuesRepo.of({ wanting, write })
    })
  )
}
