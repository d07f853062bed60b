/** Processes and ports for the benchmarks: the gateway and friends run as real processes. */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { once } from "node:events"
import { readdir, readFile } from "node:fs/promises"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"

export const root = fileURLToPath(new URL("..", import.meta.url))

/** Whether processes can be pinned to a CPU (the proxies on CPU 1, everything else on CPU 0). */
export const hasTaskset = (() => {
  try {
    execFileSync("taskset", ["-pc", "0", String(process.pid)], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

/**
 * The environment a benchmarked gateway runs with: its database, the mock provider, quiet logs, no
 * extraction (so no cues written for imported memories either: their jobs would wait forever).
 */
export const gatewayEnvironment = (databaseUrl: string, mockUrl: string): Record<string, string> => ({
  DATABASE_URL: databaseUrl,
  HOST: "127.0.0.1",
  UPSTREAM_BASE_URL: `${mockUrl}/v1`,
  UPSTREAM_API_KEY: "sk-bench",
  LOG_LEVEL: "warn",
  EXTRACTION_CONCURRENCY: "0",
  EXTRACTION_WRITE_CUES: "false"
})

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A process under test, on CPU 1; resolves once `readyUrl` answers. `onOutput` receives what it
 * writes (its log), else its standard output is dropped. `scriptArgs` follow the script.
 */
export const startProcess = async (
  script: string,
  env: Record<string, string>,
  readyUrl: string,
  onOutput?: (text: string) => void,
  scriptArgs: ReadonlyArray<string> = []
) => {
  const command = hasTaskset ? "taskset" : process.execPath
  const args = [...(hasTaskset ? ["-c", "1", process.execPath] : []), script, ...scriptArgs]
  const child = spawn(command, args, {
    env: { PATH: process.env["PATH"] ?? "", ...env },
    stdio: ["ignore", onOutput === undefined ? "ignore" : "pipe", "pipe"]
  })
  let stderr = ""
  child.stderr!.on("data", (part: Buffer) => (stderr += part.toString()))
  if (onOutput !== undefined) {
    for (const stream of [child.stdout!, child.stderr!]) stream.on("data", (part: Buffer) => onOutput(part.toString()))
  }
  for (let i = 0; i < 600; i++) {
    if (
      await fetch(readyUrl).then(
        (r) => r.status < 500,
        () => false
      )
    )
      return child
    if (child.exitCode !== null) throw new Error(`${script} exited: ${stderr}`)
    await sleep(100)
  }
  throw new Error(`${script} did not start: ${stderr}`)
}

export const stop = async (child: ChildProcess) => {
  if (child.exitCode !== null) return
  child.kill("SIGTERM")
  await once(child, "exit")
}

/** Resident memory of a process, in KiB. */
export const rssKiB = async (pid: number) => {
  const status = await readFile(`/proc/${pid}/status`, "utf8")
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN)
}

/** CPU time (user + system) a process has used so far, in ms (all its threads). */
export const cpuMs = async (pid: number) => {
  const fields = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]!.split(" ")
  // utime and stime are fields 14 and 15 of the whole line (11 and 12 after the command), in clock ticks.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

/**
 * CPU time per kind of thread of a process, in ms, summed by thread name: `MainThread` (the event
 * loop), `WorkerThread` (worker_threads), `V8Worker` (concurrent GC and compilers), and the rest.
 */
export const threadCpuMs = async (pid: number): Promise<Record<string, number>> => {
  const byName: Record<string, number> = {}
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [])) {
    const line = await readFile(`/proc/${pid}/task/${tid}/stat`, "utf8").catch(() => "")
    const close = line.lastIndexOf(") ")
    if (close === -1) continue
    const name = line.slice(line.indexOf("(") + 1, close)
    const fields = line.slice(close + 2).split(" ")
    byName[name] = (byName[name] ?? 0) + ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  }
  return byName
}

export const commit = (() => {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root }).toString().trim()
  } catch {
    return "unknown"
  }
})()
