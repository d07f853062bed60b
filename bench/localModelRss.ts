/**
 * What the local embedding model costs in memory and start time (issue 43).
 *
 * 1. The model thread alone (`src/embedding/localModelThread.ts` in a worker of this process), started
 *    `--starts` times one after the other with an empty graph cache of its own (so the first builds the
 *    ONNX graph and the others read it), then once without a cache: the time until it is ready (model
 *    loaded, first inference done), and what it reports (runtime, where the graph came from, whether it
 *    loaded TensorFlow.js, its own load time).
 * 2. The gateway as `npm start` runs it (`node src/cli/main.ts start`, the embedded PostgreSQL in a fresh
 *    DATA_DIR, `EMBEDDINGS=local`), its graph cache emptied first: its RSS once ready, then one memory is
 *    written (`POST /api/profiles/x/memories`), its embed job awaited, and the RSS read again after
 *    `--idle` seconds of nothing; then stopped and started again on the same DATA_DIR (now with the
 *    graph kept by the first start), `--restarts` times in all.
 *
 *   node bench/localModelRss.ts [--starts 3] [--idle 10] [--restarts 2] [--no-cache]
 *
 * `--no-cache`: the gateway finds no directory it may keep the graph in (a file stands where each would
 * be), so every start builds it and ONNX Runtime reads it from memory.
 */
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Worker } from "node:worker_threads"
import { localModelCacheDirectories } from "../src/embedding/localModel.ts"
import { commit, freePort, root, sleep, startProcess, stop } from "./processes.ts"

const option = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? fallback : Number(process.argv[at + 1])
}
const STARTS = option("starts", 3)
const IDLE_S = option("idle", 10)
const RESTARTS = option("restarts", 2)
const NO_CACHE = process.argv.includes("--no-cache")

const mib = (kib: number) => (kib / 1024).toFixed(1)

// ---- 1. the model thread alone ------------------------------------------------------------------

const threadFile = join(root, "src/embedding/localModelThread.ts")
/** `cacheDirectories`: the thread's own choice when undefined. */
const startThread = async (cacheDirectories?: ReadonlyArray<string>) => {
  const started = performance.now()
  const worker = new Worker(threadFile, { stdout: true, stderr: true, workerData: { cacheDirectories } })
  worker.stdout.resume()
  worker.stderr.resume()
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    worker.on("message", (message: Record<string, unknown>) =>
      message["type"] === "ready" ? resolve(message) : reject(new Error(JSON.stringify(message)))
    )
    worker.on("error", reject)
  })
  const ms = performance.now() - started
  await worker.terminate()
  const { type: _, dimensions: __, ...reported } = ready
  return `${ms.toFixed(0)} ms ${JSON.stringify(reported)}`
}
// The graph's cache emptied first (a temporary directory: the thread's own are left alone).
const cacheDirectory = await mkdtemp(join(tmpdir(), "pmg-graph-"))
process.stdout.write(`commit ${commit}, Node ${process.version}\n\nmodel thread starts (to ready):\n`)
for (let i = 0; i < STARTS; i++) {
  process.stdout.write(`  start ${i + 1}, cache in ${cacheDirectory}: ${await startThread([cacheDirectory])}\n`)
}
process.stdout.write(`  without a cache: ${await startThread([])}\n`)
await rm(cacheDirectory, { recursive: true, force: true })

// ---- 2. the gateway's idle RSS ------------------------------------------------------------------

const status = async (pid: number) => {
  const text = await readFile(`/proc/${pid}/status`, "utf8")
  const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(text)?.[1] ?? Number.NaN)
  return { rss: field("VmRSS"), peak: field("VmHWM") }
}

const dataDir = await mkdtemp(join(tmpdir(), "pmg-rss-"))
// Run as root, the embedded PostgreSQL runs as `postgres`, which must reach DATA_DIR.
await chmod(dataDir, 0o755)
const cacheDirectories = await localModelCacheDirectories(dataDir)
for (const directory of cacheDirectories) await rm(directory, { recursive: true, force: true })
// `--no-cache`: a file where each cache directory would be, so none can be made (as on a read-only disk).
if (NO_CACHE) for (const directory of cacheDirectories) await mkdir(dirname(directory), { recursive: true })
if (NO_CACHE) for (const directory of cacheDirectories) await writeFile(directory, "")
try {
  process.stdout.write(
    `\ngateway (npm start, EMBEDDINGS=local, DATA_DIR ${dataDir}${NO_CACHE ? ", no cache directory" : ""}), ${IDLE_S} s idle:\n`
  )
  for (let run = 0; run < RESTARTS; run++) {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const gateway = await startProcess(
      join(root, "src/cli/main.ts"),
      {
        DATA_DIR: dataDir,
        HOST: "127.0.0.1",
        PORT: String(port),
        EMBEDDINGS: "local",
        EXTRACTION_CONCURRENCY: "0",
        EXTRACTION_WRITE_CUES: "false",
        LOG_LEVEL: "warn"
      },
      `${base}/ready`,
      undefined,
      ["start"]
    )
    try {
      const pid = gateway.pid!
      await sleep(IDLE_S * 1000)
      const before = await status(pid)
      const post = (path: string, body: unknown) =>
        fetch(base + path, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body)
        })
      const profile = `x${run}`
      await post("/api/profiles", { externalId: profile })
      const written = performance.now()
      const created = await post(`/api/profiles/${profile}/memories`, {
        content: "The user's dog Rex is a border collie.",
        type: "fact"
      })
      if (!created.ok) throw new Error(`the memory was not written: ${created.status} ${await created.text()}`)
      // Its embed job done: the model thread started, loaded and embedded it.
      for (;;) {
        const jobs = (await (await fetch(`${base}/api/jobs?status=succeeded&limit=100`)).json()) as {
          jobs: Array<{ kind: string; profileId?: string }>
        }
        if (jobs.jobs.filter((job) => job.kind === "embed").length > run) break
        if (performance.now() - written > 120_000) throw new Error("the memory was not embedded in 2 minutes")
        await sleep(50)
      }
      const embeddedMs = performance.now() - written
      await sleep(IDLE_S * 1000)
      const after = await status(pid)
      process.stdout.write(
        `  start ${run + 1}: RSS before the model ${mib(before.rss)} MiB; memory embedded in ${embeddedMs.toFixed(0)} ms; ` +
          `idle RSS after ${mib(after.rss)} MiB (peak ${mib(after.peak)} MiB)\n`
      )
    } finally {
      await stop(gateway)
    }
  }
} finally {
  await rm(dataDir, { recursive: true, force: true })
  if (NO_CACHE) for (const directory of cacheDirectories) await rm(directory, { force: true })
}
