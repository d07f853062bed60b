import { execFile } from "node:child_process"
import { mkdtemp, readFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const cliScript = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const recorder = fileURLToPath(new URL("../support/recordModules.ts", import.meta.url))

/**
 * What a command that talks to a running gateway must never load: the server, the database, the
 * embedding model, the checks of `doctor`, and the packages only they use. Each of these once made every
 * command take seconds to start (`pmg --version` 2.2 s, `doctor` 12.5 s).
 */
const HEAVY = [
  "/src/app/serve.ts",
  "/src/app/Gateway.ts",
  "/src/app/HttpServerLive.ts",
  "/src/db/Database.ts",
  "/src/db/EmbeddedPostgres.ts",
  "/src/embedding/",
  "/src/background/",
  "/src/cli/doctor/",
  "/src/cli/migrate/",
  "/node_modules/redis/",
  "/node_modules/@redis/",
  "/node_modules/undici/",
  "/node_modules/ws/",
  "/node_modules/yaml/",
  "/node_modules/protobufjs/",
  "/node_modules/@energetic-ai/"
]

/**
 * How many modules such a command may load. It loads about 470 (Effect's, the CLI's and the typed
 * client's: the API definition's schemas); it loaded about 1,940 when it loaded the server too.
 */
const MODULE_BUDGET = 700

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
  /** The URL of every module the run loaded. */
  readonly modules: ReadonlyArray<string>
}

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "pmg-cli-startup-"))
})
afterAll(() => rm(dir, { recursive: true, force: true }))

let runs = 0
/** Runs the CLI with only the given environment, recording the modules it loads. */
const cli = async (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Run> => {
  const record = join(dir, `modules-${++runs}.txt`)
  const { code, stderr, stdout } = await new Promise<Omit<Run, "modules">>((resolve) =>
    execFile(
      process.execPath,
      ["--import", recorder, cliScript, ...args],
      { env: { PATH: process.env["PATH"] ?? "", RECORD_MODULES_TO: record, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr })
    )
  )
  return { code, stdout, stderr, modules: (await readFile(record, "utf8")).split("\n") }
}

/** The first few heavy modules a run loaded. */
const heavyIn = (modules: ReadonlyArray<string>) =>
  modules.filter((url) => HEAVY.some((part) => url.includes(part))).slice(0, 5)

describe("the CLI's start-up", () => {
  it("prints its version without loading the server, the database or the embedding model", async () => {
    const run = await cli(["--version"])
    expect(run.stdout).toMatch(/^profile-memory-gateway v\d+\.\d+\.\d+/)
    expect(heavyIn(run.modules)).toEqual([])
    expect(run.modules.length).toBeLessThan(MODULE_BUDGET)
  })

  it("runs a command against a gateway on the typed client alone", async () => {
    // Nothing listens on port 9: the command runs to its request, and reports it unanswered.
    const run = await cli(["profiles", "list", "--url", "http://127.0.0.1:9"])
    expect(run.code).toBe(1)
    expect(run.stderr).toContain("cannot reach the gateway at http://127.0.0.1:9")
    expect(run.modules.some((url) => url.endsWith("/src/client/GatewayClient.ts"))).toBe(true)
    expect(heavyIn(run.modules)).toEqual([])
    expect(run.modules.length).toBeLessThan(MODULE_BUDGET)
  })

  it("loads the database's modules when `migrate` runs, and reports what is wrong with its configuration", async () => {
    const run = await cli(["migrate"], { DATABASE_URL: "not a url" })
    expect(run.code).toBe(1)
    // Logged as `start` logs a failure: in the configured log format, on standard output.
    expect(run.stdout).toContain("Invalid connection URL")
    expect(run.modules.some((url) => url.endsWith("/src/db/Database.ts"))).toBe(true)
  })
})
