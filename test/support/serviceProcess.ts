import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"

const cliScript = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

export interface ServiceProcess {
  readonly baseUrl: string
  readonly child: ChildProcess
  /** Everything the process wrote to stdout and stderr so far. */
  readonly output: () => string
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<number | null>
}

/** Starts the gateway as `npm start` does (`node src/cli/main.ts start`), or another script, with the given environment. */
export const spawnService = (env: Record<string, string>, script?: string): ServiceProcess => {
  const port = env["PORT"] ?? "0"
  const child = spawn(process.execPath, script === undefined ? [cliScript, "start"] : [script], {
    env: { PATH: process.env["PATH"] ?? "", HOST: "127.0.0.1", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
  const exited = once(child, "exit").then(([code]) => code as number | null)
  return { baseUrl: `http://127.0.0.1:${port}`, child, output: () => output, exited }
}

/** Waits until the service answers `path` (`/health`), or fails with its output if it exits first. */
export const waitUntilHealthy = async (service: ServiceProcess, timeoutMs = 60_000, path = "/health") => {
  const deadline = Date.now() + timeoutMs
  let exitCode: number | null | undefined
  void service.exited.then((code) => (exitCode = code))
  while (Date.now() < deadline) {
    if (exitCode !== undefined) throw new Error(`service exited with ${exitCode}:\n${service.output()}`)
    // A request the service accepted but never answers is given up, and tried again.
    const ok = await fetch(`${service.baseUrl}${path}`, { signal: AbortSignal.timeout(2000) }).then(
      (r) => r.ok,
      () => false
    )
    if (ok) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`service did not become healthy:\n${service.output()}`)
}
