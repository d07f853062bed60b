/**
 * Arm P of the benchmark: Portkey's open-source AI gateway (no memory), the peer the performance
 * targets name. Installed on first use from npm into node_modules/.cache (not a dependency of the
 * project); without a registry the arm is left out and the report says so.
 */
import { execFile } from "node:child_process"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { freePort, root, startProcess } from "./processes.ts"

export const PORTKEY_VERSION = "1.15.2"
const prefix = join(root, "node_modules/.cache/bench-portkey", PORTKEY_VERSION)
const script = join(prefix, "node_modules/@portkey-ai/gateway/build/start-server.js")

const install = async () => {
  if (existsSync(script)) return true
  try {
    // Its only install script applies patches for its development tools; the server runs without them.
    await promisify(execFile)(
      "npm",
      [
        "install",
        "--prefix",
        prefix,
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        `@portkey-ai/gateway@${PORTKEY_VERSION}`
      ],
      { timeout: 180_000 }
    )
    return existsSync(script)
  } catch {
    return false
  }
}

/** Portkey in front of the mock provider, or `undefined` when it cannot be installed. */
export const startPortkey = async (mockUrl: string) => {
  if (!(await install())) return undefined
  const port = await freePort()
  const child = await startProcess(script, { NODE_ENV: "production" }, `http://127.0.0.1:${port}/`, undefined, [
    `--port=${port}`,
    "--headless"
  ])
  return {
    child,
    url: `http://127.0.0.1:${port}/v1`,
    /** Portkey's way of naming the provider: OpenAI's API at the mock's address. */
    headers: {
      "x-portkey-provider": "openai",
      "x-portkey-custom-host": `${mockUrl}/v1`,
      authorization: "Bearer sk-bench"
    }
  }
}
