import { Effect, Exit, Scope } from "effect"
import { SqlClient, type SqlConnection, type SqlError, type Statement } from "effect/sql"

export interface ReservedConnection {
  /** Runs the statement on the reserved connection (reserving one first if there is none). */
  readonly execute: (
    statement: Statement.Statement<unknown>
  ) => Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>
  /** Gives the connection back (after a failure: the next statement reserves a fresh one). */
  readonly drop: Effect.Effect<void>
}

/**
 * A connection of its own, taken from the pool once and kept: statements on it never queue behind
 * request traffic for a pooled connection. Released with the current scope. Dropping one that
 * may be stuck (a frozen server) happens in the background, so it never blocks the caller.
 */
export const makeReservedConnection = Effect.fnUntraced(function* (
  options: {
    /** Run once on each connection reserved (session settings). */
    readonly onReserve?: Statement.Statement<unknown>
  } = {}
) {
  const sql = yield* SqlClient.SqlClient
  const owner = yield* Effect.scope
  let current: { readonly connection: SqlConnection.Connection; readonly scope: Scope.Closeable } | undefined

  const connection = Effect.gen(function* () {
    if (current !== undefined) return current.connection
    const scope = yield* Scope.fork(owner)
    const reserved = yield* sql.reserve.pipe(
      Effect.tap((reserved) => {
        if (options.onReserve === undefined) return Effect.void
        const [text, params] = options.onReserve.compile()
        return reserved.execute(text, params, undefined)
      }),
      Scope.provide(scope),
      Effect.onError(() => Scope.close(scope, Exit.void))
    )
    current = { connection: reserved, scope }
    return reserved
  })

  return {
    execute: (statement) =>
      Effect.flatMap(connection, (reserved) => {
        const [text, params] = statement.compile()
        return reserved.execute(text, params, undefined)
      }),
    drop: Effect.suspend(() => {
      const dropped = current
      current = undefined
      return dropped === undefined
        ? Effect.void
        : Effect.asVoid(Effect.forkDetach(Scope.close(dropped.scope, Exit.void)))
    })
  } satisfies ReservedConnection
})
