/**
 * The request path of this checkout against another one (e.g. the previous release), measured in
 * pairs so that the drift of a shared machine cancels out: each arm is a gateway on its own database
 * with the main benchmark's profile (a summary, five traits, fifty memories) and the same message
 * every time, both alive and pinned to the same CPU.
 *   latency     single requests, one arm then the other (the order flips every pair): each arm's p50
 *               and p90, and the median of the pairs' differences
 *   throughput  1-second bursts at 64 connections, one arm then the other: the median of the pairs'
 *               ratios of requests per second and of CPU per request (from /proc, all threads)
 *
 *   git worktree add /tmp/previous <ref> && ln -s "$PWD/node_modules" /tmp/previous/node_modules
 *   npm run bench:compare -- /tmp/previous                 # EMBEDDINGS=off npm run … for keyword ranking
 *   npm run bench:compare -- /tmp/previous --smoke         # a short run: checks that it works
 */
import { join, resolve } from "node:path"
import { Pool } from "undici"
import { startBenchDatabase } from "./benchDatabase.ts"
import { BENCH_USER, chatBody, seedBenchProfile } from "./benchProfile.ts"
import { load, median, percentile } from "./loader.ts"
import { startMockUpstream } from "./mockUpstream.ts"
import { commit, cpuMs, freePort, gatewayEnvironment, root, startProcess, stop } from "./processes.ts"

const other = process.argv[2]
if (other === undefined || other.startsWith("--"))
  throw new Error("usage: npm run bench:compare -- <path of another checkout> [--smoke]")
const smoke = process.argv.includes("--smoke")
const WARMUP = smoke ? 50 : 300
const PAIRS = smoke ? 100 : 3000
const BURSTS = smoke ? 2 : 30

const database = await startBenchDatabase("compare")
const mock = await startMockUpstream()
await mock.configure({ latencyMs: 0 })

const start = async (name: string, checkout: string) => {
  const port = await freePort()
  const child = await startProcess(
    join(checkout, "src/main.ts"),
    {
      ...gatewayEnvironment(await database.createDatabase(name), mock.url),
      PORT: String(port),
      ...(process.env["EMBEDDINGS"] === undefined ? {} : { EMBEDDINGS: process.env["EMBEDDINGS"] })
    },
    `http://127.0.0.1:${port}/health`
  )
  const base = `http://127.0.0.1:${port}`
  await seedBenchProfile(base)
  return { name, child, base, pool: new Pool(base, { connections: 1 }) }
}
type Arm = Awaited<ReturnType<typeof start>>

const arms: readonly [Arm, Arm] = [await start("other", resolve(other)), await start("this", root)]
const body = chatBody(false)
const headers = { "content-type": "application/json", "x-service-id": BENCH_USER }

const timeOne = async (arm: Arm) => {
  const started = performance.now()
  const response = await arm.pool.request({ method: "POST", path: "/v1/chat/completions", headers, body })
  await response.body.text()
  if (response.statusCode !== 200) throw new Error(`${arm.name} answered ${response.statusCode}`)
  return performance.now() - started
}
/** The arms in this pair's order: which goes first flips every pair. */
const inOrder = (pair: number) => (pair % 2 === 0 ? arms : ([arms[1], arms[0]] as const))

const latency = { other: [] as Array<number>, this: [] as Array<number> }
for (let pair = 0; pair < WARMUP + PAIRS; pair++) {
  for (const arm of inOrder(pair)) {
    const ms = await timeOne(arm)
    if (pair >= WARMUP) latency[arm.name as "other" | "this"].push(ms)
  }
}

const bursts = { other: [] as Array<{ rps: number; cpu: number }>, this: [] as Array<{ rps: number; cpu: number }> }
for (let pair = 0; pair <= BURSTS; pair++) {
  for (const arm of inOrder(pair)) {
    const cpuBefore = await cpuMs(arm.child.pid!)
    const run = await load({
      url: `${arm.base}/v1`,
      body,
      concurrency: 64,
      durationMs: 1000,
      headers: { "x-service-id": BENCH_USER }
    })
    const cpuAfter = await cpuMs(arm.child.pid!)
    const ok = run.samples.filter((sample) => sample.ok).length
    // The first pair warms up.
    if (pair > 0)
      bursts[arm.name as "other" | "this"].push({ rps: ok / (run.elapsedMs / 1000), cpu: (cpuAfter - cpuBefore) / ok })
  }
}

for (const arm of arms) {
  await arm.pool.close()
  await stop(arm.child)
}
await mock.close()
await database.close()

const fmt = (n: number, digits = 3) => n.toFixed(digits)
const pairDiff = median(latency.this.map((ms, index) => ms - latency.other[index]!))
const ratio = (key: "rps" | "cpu") => median(bursts.this.map((burst, index) => burst[key] / bursts.other[index]![key]))
const row = (name: "other" | "this", label: string) => {
  const ms = latency[name]
  return `| ${label} | ${fmt(median(ms))} | ${fmt(percentile(ms, 90))} | ${fmt(median(bursts[name].map((b) => b.rps)), 0)} | ${fmt(median(bursts[name].map((b) => b.cpu)))} |`
}
process.stdout.write(
  [
    `Compared ${commit} (this) with ${other} (other)${process.env["EMBEDDINGS"] === undefined ? "" : `, EMBEDDINGS=${process.env["EMBEDDINGS"]}`}: ` +
      `${PAIRS} pairs of sequential requests, ${BURSTS} pairs of 1 s bursts at 64 connections, a 0 ms mock.`,
    "",
    "| Arm | p50 (ms) | p90 (ms) | Throughput c=64 (req/s, median) | CPU ms / request c=64 (median) |",
    "|---|---|---|---|---|",
    row("other", `other (${other})`),
    row("this", `this (${commit})`),
    "",
    `this − other, median of the pairs: latency ${pairDiff >= 0 ? "+" : ""}${fmt(pairDiff)} ms; ` +
      `throughput ×${fmt(ratio("rps"))}; CPU per request ×${fmt(ratio("cpu"))}`,
    ""
  ].join("\n")
)
