import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { decodeRows } from "../db/sqlResults.ts"
import type { ProfileId } from "../domain/Profile.ts"
import { asSent } from "../domain/storableText.ts"

/** How many responses back `previous_response_id` follows at most (a guard against a cycle made by hand). */
const MAX_CHAIN = 1000

/** A response as the gateway keeps it: the request's own input items and the response object the client got. */
export const StoredResponse = Schema.Struct({
  id: Schema.String,
  profileId: Schema.String,
  previousResponseId: Schema.NullOr(Schema.String),
  inputItems: Schema.Array(Schema.Unknown),
  response: Schema.Record(Schema.String, Schema.Unknown),
  createdAt: Schema.DateTimeUtcFromDate
})
export type StoredResponse = typeof StoredResponse.Type

/**
 * The Responses API state the gateway keeps (`stored_responses`): a response is kept with the input
 * items of its request, and `previous_response_id` rebuilds the conversation from the chain. Every
 * read and write is by a response's id within one profile (the request's user's): an id is unique per
 * profile, so a provider that reuses one loses nobody's response. What is kept is made storable first
 * (NUL and unpaired surrogates become U+FFFD, as in turns): a response the client got is kept. A
 * database failure is a defect.
 */
export class StoredResponsesRepo extends Context.Service<
  StoredResponsesRepo,
  {
    readonly keep: (response: Omit<StoredResponse, "createdAt">) => Effect.Effect<void>
    /** Every response kept for the profile, oldest first (its export). */
    readonly ofProfile: (profileId: ProfileId) => Effect.Effect<ReadonlyArray<StoredResponse>>
    /** The conversation up to and including this response of the profile, oldest first; `None` if it has no such response. */
    readonly chain: (id: string, profileId: ProfileId) => Effect.Effect<Option.Option<ReadonlyArray<StoredResponse>>>
    readonly find: (id: string, profileId: ProfileId) => Effect.Effect<Option.Option<StoredResponse>>
    /** Deletes the profile's response (later ones that continue it keep their own items); false if it had none. */
    readonly remove: (id: string, profileId: ProfileId) => Effect.Effect<boolean>
  }
>()("gateway/responses/StoredResponsesRepo") {
  static readonly layer = Layer.effect(
    StoredResponsesRepo,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const rows = decodeRows(StoredResponse)
      const columns = sql`r.id, r.profile_id::text AS profile_id, r.previous_response_id, r.input_items, r.response,
                          r.created_at`

      return StoredResponsesRepo.of({
        keep: (response) =>
          sql`
            INSERT INTO stored_responses (id, profile_id, previous_response_id, input_items, response)
            VALUES (${response.id}, ${response.profileId}, ${response.previousResponseId},
                    ${asSent(response.inputItems)}::json, ${asSent(response.response)}::json)
            ON CONFLICT (profile_id, id) DO UPDATE SET
              previous_response_id = excluded.previous_response_id, input_items = excluded.input_items,
              response = excluded.response, created_at = excluded.created_at`.pipe(Effect.orDie, Effect.asVoid),
        ofProfile: (profileId) =>
          sql`SELECT ${columns} FROM stored_responses r WHERE r.profile_id = ${profileId} ORDER BY r.created_at, r.id`.pipe(
            rows,
            Effect.orDie
          ),
        chain: (id, profileId) =>
          sql`
            WITH RECURSIVE chain AS (
              SELECT r.*, 1 AS depth FROM stored_responses r WHERE r.id = ${id} AND r.profile_id = ${profileId}
              UNION ALL
              SELECT r.*, c.depth + 1 FROM stored_responses r JOIN chain c ON r.id = c.previous_response_id
              WHERE r.profile_id = ${profileId} AND c.depth < ${MAX_CHAIN}
            )
            SELECT ${columns} FROM chain r ORDER BY r.depth DESC`.pipe(
            rows,
            Effect.orDie,
            Effect.map((found) => (found.length === 0 ? Option.none() : Option.some(found)))
          ),
        find: (id, profileId) =>
          sql`SELECT ${columns} FROM stored_responses r WHERE r.id = ${id} AND r.profile_id = ${profileId}`.pipe(
            rows,
            Effect.orDie,
            Effect.map((found) => Option.fromUndefinedOr(found[0]))
          ),
        remove: (id, profileId) =>
          sql`DELETE FROM stored_responses r WHERE r.id = ${id} AND r.profile_id = ${profileId} RETURNING 1`.pipe(
            Effect.orDie,
            Effect.map((deleted) => deleted.length > 0)
          )
      })
    })
  )

  /** The live service on the database you provide: it reads by the profile's internal id, so it needs only a `PgClient`. */
  static readonly layerTest = StoredResponsesRepo.layer
}
