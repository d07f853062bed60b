import { Cause, Effect, Predicate, Schema } from "effect"
import { SqlError } from "effect/sql"

/**
 * What the repositories do with what the database answers. A database failure is not part of the
 * domain: it is a defect, which surfaces as a logged 500. Rows that do not decode are one too.
 */
export const decodeRows = <S extends Schema.Codec<unknown, unknown>>(schema: S) => {
  const decode = Schema.decodeUnknownEffect(Schema.Array(schema))
  return <E, R>(rows: Effect.Effect<ReadonlyArray<unknown>, E, R>): Effect.Effect<ReadonlyArray<S["Type"]>, E, R> =>
    Effect.flatMap(rows, (found) => Effect.orDie(decode(found)))
}

const TotalRow = Schema.Struct({ total: Schema.Int })

/** The number a `SELECT count(*)::int AS total …` answers. */
export const decodeTotal = <E, R>(rows: Effect.Effect<ReadonlyArray<unknown>, E, R>): Effect.Effect<number, E, R> =>
  Effect.map(decodeRows(TotalRow)(rows), (found) => found[0]?.total ?? 0)

/** A write lost the race against its profile's delete: the foreign key to the profile failed. */
export class ProfileDeleted extends Schema.TaggedError<ProfileDeleted>()("ProfileDeleted", {}) {}

const FOREIGN_KEY_VIOLATION = "23503"

const isForeignKeyError = (error: unknown) =>
  SqlError.isSqlError(error) &&
  Predicate.hasProperty(error.reason.cause, "code") &&
  error.reason.cause.code === FOREIGN_KEY_VIOLATION

/** The write failed on a foreign key (as a failure or, from stores that die on SQL errors, a defect). */
export const isForeignKeyViolation = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.some((reason) =>
    isForeignKeyError(Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : undefined)
  )

/** A foreign-key failure becomes `ProfileDeleted`; every other database failure is a defect. */
export const profileDeletedOnForeignKey = <A, R>(
  effect: Effect.Effect<A, SqlError.SqlError, R>
): Effect.Effect<A, ProfileDeleted, R> =>
  effect.pipe(
    Effect.catchTag("SqlError", (error) =>
      isForeignKeyError(error) ? Effect.fail(new ProfileDeleted()) : Effect.die(error)
    )
  )
