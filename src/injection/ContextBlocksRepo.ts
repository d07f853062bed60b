import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Schema } from "effect"
import { decodeRows } from "../db/sqlResults.ts"
import type { ProfileId } from "../domain/Profile.ts"
import { PlacementConfig } from "./PlacementConfig.ts"

/** The context a request got at its tail, kept so the next turn can put it back where it was. */
export interface KeptTail {
  /** What went at the tail (`""`: nothing, but the blocks before it went back). */
  readonly text: string
  /** The hashes of the positions whose earlier tails went back in the same request, oldest first. */
  readonly chain: ReadonlyArray<string>
  /** When it was sent, epoch milliseconds. */
  readonly createdAt: number
  /** The profile's `forgetting` when it was rendered: it goes back only while that has not changed. */
  readonly forgetting: number
}

/** Most tails this replica keeps in memory (a tail is a block of about a kilobyte). */
const REMEMBERED_TAILS = 20_000

const TailRow = Schema.Struct({
  contextHash: Schema.String,
  contextBlock: Schema.String,
  contextChain: Schema.Array(Schema.String),
  contextForgetting: Schema.Int,
  createdAt: Schema.Date
})

/**
 * Where the tails of earlier turns are found again: this replica's memory first (it sent them), the
 * database otherwise (another replica did, or this one restarted). There a tail is kept with its
 * turn's answer (`TurnsRepo` writes it in the turn's own statement, before the answer ends), so the
 * next turn finds it on any replica. A tail older than `CONTEXT_BLOCK_TTL_HOURS` (long after any
 * provider's cache), or rendered before the profile last lost a memory or a trait (its `forgetting`
 * count has moved since), is not put back: it may hold what went (the database clears those).
 */
export class ContextBlocksRepo extends Context.Service<
  ContextBlocksRepo,
  {
    /**
     * The tails kept at these positions of a profile's conversation (their hashes, oldest first; the
     * last is the previous turn's), sent within `CONTEXT_BLOCK_TTL_HOURS` and rendered under the
     * profile's current `forgetting` count.
     */
    readonly find: (
      profileId: ProfileId,
      hashes: ReadonlyArray<string>,
      forgetting: number
    ) => Effect.Effect<ReadonlyMap<string, KeptTail>>
    /** Notes a tail this replica sends (the database gets it with its turn). */
    readonly remember: (profileId: ProfileId, hash: string, tail: KeptTail) => void
  }
>()("gateway/injection/ContextBlocksRepo") {
  static readonly layer = Layer.effect(
    ContextBlocksRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const { keptHours } = yield* PlacementConfig
      const keptMs = keptHours * 3_600_000
      // Oldest first (a Map keeps insertion order): what is read again moves to the end.
      const memory = new Map<string, KeptTail>()
      const keyOf = (profileId: ProfileId, hash: string) => `${profileId}:${hash}`

      const remember = (profileId: ProfileId, hash: string, tail: KeptTail) => {
        const key = keyOf(profileId, hash)
        memory.delete(key)
        if (memory.size >= REMEMBERED_TAILS) memory.delete(memory.keys().next().value!)
        memory.set(key, tail)
      }

      const recalled = (profileId: ProfileId, hash: string, notBefore: number, forgetting: number) => {
        const tail = memory.get(keyOf(profileId, hash))
        return tail !== undefined && tail.createdAt > notBefore && tail.forgetting === forgetting ? tail : undefined
      }

      // The latest turn with each hash (a request sent twice keeps its latest tail).
      const fromDatabase = (
        profileId: ProfileId,
        hashes: ReadonlyArray<string>,
        notBefore: number,
        forgetting: number
      ) =>
        sql`
          SELECT DISTINCT ON (context_hash) context_hash, context_block, context_chain, context_forgetting, created_at
          FROM messages
          WHERE profile_id = ${profileId} AND context_hash IN (SELECT jsonb_array_elements_text(${sql.json(hashes)}))
            AND created_at > to_timestamp(${notBefore / 1000}) AND context_forgetting = ${forgetting}
          ORDER BY context_hash, created_at DESC`.pipe(
          decodeRows(TailRow),
          Effect.orDie,
          Effect.map((rows) =>
            rows.map((row) => {
              const tail = {
                text: row.contextBlock,
                chain: row.contextChain,
                createdAt: row.createdAt.getTime(),
                forgetting: row.contextForgetting
              }
              remember(profileId, row.contextHash, tail)
              return [row.contextHash, tail] as const
            })
          )
        )

      const find = Effect.fnUntraced(function* (
        profileId: ProfileId,
        hashes: ReadonlyArray<string>,
        forgetting: number
      ) {
        const found = new Map<string, KeptTail>()
        const previous = hashes.at(-1)
        if (previous === undefined) return found
        const notBefore = Date.now() - keptMs
        // The previous turn's tail names the earlier ones that went with it: when this replica sent it,
        // the whole conversation is usually in memory and the database is not asked.
        const last = recalled(profileId, previous, notBefore, forgetting)
        const wanted = last === undefined ? hashes : [...last.chain.filter((hash) => hashes.includes(hash)), previous]
        const missing: Array<string> = []
        for (const hash of wanted) {
          const tail = recalled(profileId, hash, notBefore, forgetting)
          if (tail === undefined) missing.push(hash)
          else found.set(hash, tail)
        }
        if (missing.length > 0) {
          for (const [hash, tail] of yield* fromDatabase(profileId, missing, notBefore, forgetting)) {
            found.set(hash, tail)
          }
        }
        return found
      })

      return ContextBlocksRepo.of({ find, remember })
    })
  )
}
