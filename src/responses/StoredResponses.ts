import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { ProfileId } from "../domain/Profile.ts"
import { decodeRows } from "../profiles/sqlResults.ts"

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

/** Which stored responses a caller reaches: those of its namespace, and of one profile when it names its user. */
export interface ResponseScope {
  readonly namespace: string
  readonly profileId: ProfileId | undefined
}

/**
 * The Responses API state the gateway keeps (`stored_responses`): a response is kept with the input
 * items of its request, and `previous_response_id` rebuilds the conversation from the chain. Every
 * read is by a response's id within a profile, or within a namespace (an unguessable id, as the
 * provider's own are). A database failure is a defect.
 */
export class StoredResponses extends Context.Service<
  StoredResponses,
  {
    readonly keep: (response: Omit<StoredResponse, "createdAt">) => Effect.Effect<void>
    /** Every response kept for the profile, oldest first (its export). */
    readonly ofProfile: (profileId: ProfileId) => Effect.Effect<ReadonlyArray<StoredResponse>>
    /** The conversation up to and including this response of the profile, oldest first; `None` if it has no such response. */
    readonly chain: (id: string, profileId: ProfileId) => Effect.Effect<Option.Option<ReadonlyArray<StoredResponse>>>
    readonly find: (id: string, scope: ResponseScope) => Effect.Effect<Option.Option<StoredResponse>>
    /** Deletes the response (later ones that continue it keep their own items); false if there was none in scope. */
    readonly remove: (id: string, scope: ResponseScope) => Effect.Effect<boolean>
  }
>()("gateway/responses/StoredResponses") {
  static readonly layer = Layer.effect(
    StoredResponses,
    Effect.gen(function* () {
      const sql = yield* PgClient.PgClient
      const rows = decodeRows(StoredResponse)
      const columns = sql`r.id, r.profile_id::text AS profile_id, r.previous_response_id, r.input_items, r.response,
                          r.created_at`
      const inScope = (scope: ResponseScope) =>
        scope.profileId === undefined
          ? sql`r.profile_id IN (SELECT id FROM profiles WHERE namespace = ${scope.namespace})`
          : sql`r.profile_id = ${scope.profileId}`

      return StoredResponses.of({
        keep: (response) =>
          sql`
            INSERT INTO stored_responses (id, profile_id, previous_response_id, input_items, response)
            VALUES (${response.id}, ${response.profileId}, ${response.previousResponseId},
                    ${sql.json(response.inputItems)}, ${sql.json(response.response)})`.pipe(
            Effect.orDie,
            Effect.asVoid
          ),
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
        find: (id, scope) =>
          sql`SELECT ${columns} FROM stored_responses r WHERE r.id = ${id} AND ${inScope(scope)}`.pipe(
            rows,
            Effect.orDie,
            Effect.map((found) => Option.fromUndefinedOr(found[0]))
          ),
        remove: (id, scope) =>
          sql`DELETE FROM stored_responses r WHERE r.id = ${id} AND ${inScope(scope)} RETURNING 1`.pipe(
            Effect.orDie,
            Effect.map((deleted) => deleted.length > 0)
          )
      })
    })
  )
}
