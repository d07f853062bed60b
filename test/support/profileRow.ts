import { randomBytes } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Effect, Schema } from "effect"
import { ProfileId } from "../../src/domain/Profile.ts"

/**
 * A new profile in `default`, inserted as it is: for the stores that are reached by a profile's
 * internal id once its user is found (threads, kept Responses state). Its id.
 */
export const newProfileId = Effect.gen(function* () {
  const sql = yield* PgClient.PgClient
  const rows = yield* sql<{
    id: string
  }>`INSERT INTO profiles (external_id) VALUES (${`u-${randomBytes(4).toString("hex")}`}) RETURNING id`
  return Schema.decodeUnknownSync(ProfileId)(rows[0]!.id)
}).pipe(Effect.orDie)
